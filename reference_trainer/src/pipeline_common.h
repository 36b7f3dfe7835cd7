// Pieces both pipelines share (internal header).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "trainer/examples.h"
#include "trainer/features.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/pipeline.h"
#include "trainer/tokenizer.h"

namespace trainer {

inline Format format_of(const Config& config, const std::string& path) {
  return config.format ? *config.format : format_from_path(path);
}

inline TrainOptions train_options(const Config& config) {
  TrainOptions options;
  options.optimizer = config.optimizer;
  options.learning_rate = config.learning_rate > 0.0f ? config.learning_rate
                                                     : default_learning_rate(config.optimizer, config.hidden);
  options.max_batch_rows = config.batch_rows;
  return options;
}

// Text → TF-IDF sparse row, every buffer reused.
struct Featurizer {
  explicit Featurizer(FeatureExtractor& extractor) : extractor(extractor) {}
  void operator()(const std::string& text) {
    tokenizer.tokenize(text, tokens);
    extractor.extract(tokens, ids, values);
  }
  FeatureExtractor& extractor;
  Tokenizer tokenizer;
  std::vector<std::string_view> tokens;
  std::vector<std::uint32_t> ids;
  std::vector<double> values;
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Streams the evaluation rows (the test file; or, without one, the held-out rows of the
// data file) through `model`, one row at a time. Marks the `evaluate` stage.
Confusion evaluate_streamed(const Config& config, const Model& model, FeatureExtractor& extractor,
                            const LabelSet& labels, std::uint64_t& rows, std::uint64_t& bad_rows);

}  // namespace trainer
