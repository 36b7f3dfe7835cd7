// Suffix sums for the per-stage retained bytes (stage_ledger.h, for the heap and device
// memory both).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memstage::reports {

// Suffix sums of a growing array of signed values, each append, update and query in
// O(log n) (a Fenwick tree): a stage's retained bytes are the live bytes allocated in it
// and in every stage begun after it while it was open, which is every stage from it to
// the newest when it closes.
class SuffixSums {
 public:
  void push_back() {
    // Node i (1-based) holds the sum of the elements (i - lowbit(i), i]; all but the new
    // one exist already.
    const size_t i = tree_.size() + 1;
    tree_.push_back(prefix(i - 1) - prefix(i - (i & (~i + 1))));
  }
  void add(size_t index, int64_t delta) {
    total_ += delta;
    for (size_t i = index + 1; i <= tree_.size(); i += i & (~i + 1)) tree_[i - 1] += delta;
  }
  // The sum of the elements from `index` to the last.
  int64_t suffix(size_t index) const { return total_ - prefix(index); }

 private:
  int64_t prefix(size_t count) const {
    int64_t sum = 0;
    for (size_t i = count; i > 0; i -= i & (~i + 1)) sum += tree_[i - 1];
    return sum;
  }
  std::vector<int64_t> tree_;
  int64_t total_ = 0;
};

}  // namespace memstage::reports
