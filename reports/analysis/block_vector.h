// A vector for the analysis's largest lists of plain structs that grows a block at a time
// instead of by doubling. The analysis of a large trace waits in good part on the kernel
// handing it fresh, zeroed pages (`clear_page_erms` 15-42 % of `memstage report` of a
// torch import's trace on the project's VM); a doubling vector touches about three times
// its final size in fresh pages as it grows (each larger copy, then the old one freed and
// returned) and holds up to twice what it needs, where blocks touch each page once and
// never move. Elements are reached through the block table: one more load, from a small
// cached array. A block's elements are left uninitialised until pushed (a type with a
// constructor would have a whole block constructed, and its pages touched, at once).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace memstage::reports {

// Blocks of about 1 MiB, a power of two of elements (the index split is a shift and a mask).
template <class T, size_t kBlockItems = std::bit_floor((size_t{1} << 20) / sizeof(T))>
class BlockVector {
  static_assert(std::has_single_bit(kBlockItems), "kBlockItems must be a power of two");

 public:
  template <class U>
  void push_back(U&& value) {
    if (size_ % kBlockItems == 0) blocks_.push_back(std::make_unique_for_overwrite<T[]>(kBlockItems));
    blocks_.back()[size_ % kBlockItems] = std::forward<U>(value);
    ++size_;
  }
  T& operator[](size_t i) { return blocks_[i / kBlockItems][i % kBlockItems]; }
  const T& operator[](size_t i) const { return blocks_[i / kBlockItems][i % kBlockItems]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t size_ = 0;
};

}  // namespace memstage::reports
