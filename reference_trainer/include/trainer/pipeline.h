// The two pipelines over one model. Both mark their stages with the memstage stage API.
//
// naive: load (whole file into memory, then a table) → vocabulary (every row, unbounded)
//        → vectorize (dense float64 rows × vocabulary) → to_float32 (a copy) → split
//        (hstack and fancy-indexing copies) → train (dense rows) → evaluate (dense rows).
// optimized: vocabulary (a streaming pass with pruning; with the hashing trick only the
//        labels are collected) → train (each epoch streams the file into reused CSR
//        batches; nothing allocated per batch) → evaluate (streamed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trainer/examples.h"
#include "trainer/model.h"

namespace trainer {

enum class Pipeline { naive, optimized };

struct Config {
  Pipeline pipeline = Pipeline::optimized;
  std::string data_path;
  std::string test_path;          // empty: hold out split_ratio of the data file
  std::optional<Format> format;   // empty: from each file's extension
  double split_ratio = 0.1;
  unsigned epochs = 5;
  std::size_t batch_rows = 32;
  std::size_t hidden = 0;
  Optimizer optimizer = Optimizer::sgd;
  float learning_rate = 0.0f;     // 0: the optimizer's default (see default_learning_rate)
  std::size_t max_features = 0;   // 0: every term (the optimized vocabulary only)
  std::uint64_t min_count = 1;    // the optimized vocabulary only
  unsigned hash_bits = 0;         // > 0: hashing trick instead of a vocabulary (optimized)
  bool bigrams = false;
  unsigned threads = 1;           // optimized: 2 or more: a reader thread prepares the next batch
  std::uint64_t max_rows = 0;     // 0: all rows of the data file
  std::uint64_t max_test_rows = 0;
  bool skip_bad_rows = false;
  std::uint64_t seed = 42;
  bool quantize = false;          // int8 first layer for evaluation and the saved model
  std::string save_path;
  std::string load_path;          // evaluate a saved model on test_path, no training
  bool progress = false;          // draw the progress bar (the caller checks for a terminal)
};

struct Result {
  double accuracy = 0.0;
  double macro_f1 = 0.0;
  std::uint64_t train_rows = 0;
  std::uint64_t test_rows = 0;
  std::uint64_t bad_rows = 0;
  std::size_t features = 0;
  std::size_t classes = 0;
  double final_loss = 0.0;      // mean loss of the last epoch
  double train_s = 0.0;         // the train stage, wall clock
  double total_s = 0.0;
  std::uint64_t peak_rss_bytes = 0;
};

Result run(const Config& config);
Result run_naive(const Config& config);
Result run_optimized(const Config& config);

// Labels in sorted order, so that both pipelines number them alike.
class LabelSet {
 public:
  void add(const std::string& label);
  void finish();  // sorts and numbers
  // The label's index, or -1 when it was never seen in training. Allocates nothing.
  std::int64_t find(const std::string& label) const;
  // The label's index; throws Error naming file and line when it is unknown.
  std::uint32_t index(const std::string& label, const std::string& path, std::uint64_t line) const;
  std::size_t size() const { return labels_.size(); }
  const std::vector<std::string>& labels() const { return labels_; }
  void assign(std::vector<std::string> labels);

 private:
  std::vector<std::string> labels_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

// Whether row `index` of the data file is held out for testing when there is no test file:
// a hash of the index, so both pipelines split alike without shuffling anything.
bool held_out(std::uint64_t index, double ratio, std::uint64_t seed);

// SGD without a hidden layer: 20, large because TF-IDF rows have unit norm, so each weight
// sees small inputs (on the Debian set, 5 epochs: 2 → 77.4 %, 8 → 80.9 %, 20 → 81.6 % test
// accuracy). SGD with a hidden layer: 2 (20 diverges). Adam: 0.005, the better choice with
// a hidden layer.
float default_learning_rate(Optimizer optimizer, std::size_t hidden);

// Checks a configuration and throws Error with the first problem found.
void validate(const Config& config);

}  // namespace trainer
