// A vector for the largest lists of plain structs, the trace reader's and the analysis's, that grows a block at a time
// instead of by doubling. The analysis of a large trace waits in good part on the kernel
// handing it fresh, zeroed pages (`clear_page_erms`, docs/performance.md); a doubling vector touches about three times
// its final size in fresh pages as it grows (each larger copy, then the old one freed and
// returned) and holds up to twice what it needs, where blocks touch each page once and
// never move. Elements are reached through the block table: one more load, from a small
// cached array. A block's elements are left uninitialised until pushed (a type with a
// constructor would have a whole block constructed, and its pages touched, at once).
// The first block starts small and doubles up to the block size (it alone moves, while
// small): a job of a thousand short processes has a thousand small traces, each with its
// own stack tree, and a first block of 1 MiB took a fresh huge page apiece (2 MiB zeroed
// per trace).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace memstage::trace {

// Blocks of about 1 MiB, a power of two of elements (the index split is a shift and a mask).
template <class T, size_t kBlockItems = std::bit_floor((size_t{1} << 20) / sizeof(T))>
class BlockVector {
  static_assert(std::has_single_bit(kBlockItems), "kBlockItems must be a power of two");

 public:
  template <class U>
  void push_back(U&& value) {
    T item(std::forward<U>(value));  // before the first block moves: `value` may be in it
    if (size_ == first_capacity_ && size_ < kBlockItems) {
      grow_first_block();
    } else if (size_ % kBlockItems == 0 && size_ >= kBlockItems) {
      blocks_.push_back(std::make_unique_for_overwrite<T[]>(kBlockItems));
    }
    blocks_.back()[size_ % kBlockItems] = std::move(item);
    ++size_;
  }
  // Grows to `n` elements, the new ones `fill`: a table by id that grows as ids come.
  void grow_to(size_t n, const T& fill) {
    while (size_ < n) push_back(fill);
  }
  // Grows to `n` elements left uninitialised (their pages untouched): for a list its user
  // writes whole before reading it.
  void grow_for_overwrite_to(size_t n) {
    if (size_ == 0 && n > 0) {  // the first block at its size at once: nothing to copy
      first_capacity_ = std::min(std::bit_ceil(n), kBlockItems);
      blocks_.push_back(std::make_unique_for_overwrite<T[]>(first_capacity_));
    }
    while (size_ < n) {
      if (size_ == first_capacity_ && size_ < kBlockItems) {
        grow_first_block();
      } else if (size_ % kBlockItems == 0 && size_ >= kBlockItems) {
        blocks_.push_back(std::make_unique_for_overwrite<T[]>(kBlockItems));
      }
      const size_t block_end = size_ < kBlockItems ? first_capacity_ : (size_ / kBlockItems + 1) * kBlockItems;
      size_ = std::min(n, block_end);
    }
  }
  T& operator[](size_t i) { return blocks_[i / kBlockItems][i % kBlockItems]; }
  const T& operator[](size_t i) const { return blocks_[i / kBlockItems][i % kBlockItems]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr size_t kFirstItems = kBlockItems < 64 ? kBlockItems : 64;

  void grow_first_block() {
    const size_t capacity = first_capacity_ ? std::min(2 * first_capacity_, kBlockItems) : kFirstItems;
    auto grown = std::make_unique_for_overwrite<T[]>(capacity);
    if (size_) std::copy(blocks_[0].get(), blocks_[0].get() + size_, grown.get());
    if (blocks_.empty()) {
      blocks_.push_back(std::move(grown));
    } else {
      blocks_[0] = std::move(grown);
    }
    first_capacity_ = capacity;
  }

  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t size_ = 0;
  size_t first_capacity_ = 0;  // of blocks_[0], kBlockItems once full
};

}  // namespace memstage::trace
