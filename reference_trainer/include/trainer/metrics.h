// Accuracy and macro-F1 from a confusion matrix that is allocated once, before evaluation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainer {

class Confusion {
 public:
  explicit Confusion(std::size_t classes) : classes_(classes), counts_(classes * classes, 0) {}
  void add(std::uint32_t truth, std::uint32_t predicted) { ++counts_[truth * classes_ + predicted]; }
  std::uint64_t total() const;
  double accuracy() const;
  // Mean F1 over the classes that occur in the truth or the predictions (as scikit-learn's
  // f1_score(average="macro") does); a class with no true positive scores 0.
  double macro_f1() const;

 private:
  std::size_t classes_;
  std::vector<std::uint64_t> counts_;  // truth-major
};

// Index of the largest of `count` values (the first one on ties).
std::uint32_t argmax(const float* values, std::size_t count);

}  // namespace trainer
