#include "trainer/pipeline.h"

#include <algorithm>

#include "trainer/error.h"

namespace trainer {

void LabelSet::add(const std::string& label) {
  if (index_.find(label) != index_.end()) return;
  index_.emplace(label, 0);
  labels_.push_back(label);
}

void LabelSet::finish() {
  std::sort(labels_.begin(), labels_.end());
  for (std::size_t i = 0; i < labels_.size(); ++i) index_[labels_[i]] = static_cast<std::uint32_t>(i);
}

void LabelSet::assign(std::vector<std::string> labels) {
  labels_ = std::move(labels);
  index_.clear();
  for (std::size_t i = 0; i < labels_.size(); ++i) index_[labels_[i]] = static_cast<std::uint32_t>(i);
}

std::int64_t LabelSet::find(const std::string& label) const {
  const auto it = index_.find(label);
  return it == index_.end() ? -1 : static_cast<std::int64_t>(it->second);
}

std::uint32_t LabelSet::index(const std::string& label, const std::string& path,
                              std::uint64_t line) const {
  const std::int64_t found = find(label);
  if (found < 0) {
    throw Error(path + ":" + std::to_string(line) + ": label '" + label +
                "' does not occur in the training data");
  }
  return static_cast<std::uint32_t>(found);
}

bool held_out(std::uint64_t index, double ratio, std::uint64_t seed) {
  std::uint64_t z = index + seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z % 1000000) < ratio * 1000000.0;
}

void validate(const Config& config) {
  if (config.load_path.empty() && config.data_path.empty()) throw Error("--data is required");
  if (!config.load_path.empty() && config.test_path.empty()) {
    throw Error("--load needs --test (the file to evaluate the saved model on)");
  }
  if (config.test_path.empty() && (config.split_ratio <= 0.0 || config.split_ratio >= 1.0)) {
    throw Error("--split must be between 0 and 1 (exclusive) when there is no --test file");
  }
  if (config.epochs == 0) throw Error("--epochs must be at least 1");
  if (config.batch_rows == 0) throw Error("--batch must be at least 1");
  if (config.hash_bits > 28) throw Error("--hash-bits must be at most 28");
  if (config.hash_bits != 0 && config.pipeline == Pipeline::naive) {
    throw Error("--hash-bits is an optimized-pipeline option (the naive one fits a vocabulary)");
  }
  if (config.learning_rate < 0.0f) throw Error("--lr must be positive");
  if (config.quantize && config.pipeline == Pipeline::naive) {
    throw Error("--quantize is an optimized-pipeline option (the naive one evaluates dense float rows)");
  }
  if (config.threads == 0) throw Error("--threads must be at least 1");
}

float default_learning_rate(Optimizer optimizer, std::size_t hidden) {
  if (optimizer == Optimizer::adam) return 0.005f;
  return hidden == 0 ? 20.0f : 2.0f;
}

Result run(const Config& config) {
  validate(config);
  return config.pipeline == Pipeline::naive ? run_naive(config) : run_optimized(config);
}

}  // namespace trainer
