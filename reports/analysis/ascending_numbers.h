// Numbers 0, 1, 2, ... given to ids met in ascending order, kept as a bit an id and a count
// every 64 ids: the number of an id is how many came before it. Pass two names every site's
// stack in ascending order (stack_resolver.h); a list of numbers by id took a number for
// every id of the whole stack tree, where this takes a bit.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memstage::reports {

class AscendingNumbers {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  AscendingNumbers() = default;
  // Ids below `ids` can be numbered.
  explicit AscendingNumbers(size_t ids) : ids_(ids), bits_((ids + 63) / 64, 0), before_((ids + 63) / 64, 0) {}

  // Gives `id` the next number, size(); false (and nothing changes) when it is not above
  // every id numbered so far, or not below the ids this was made for.
  bool add(uint32_t id) {
    if (id >= ids_ || (count_ && id <= last_)) return false;
    const size_t word = id / 64;
    // The words from the last one numbered in on hold none yet: each starts after every id so far.
    for (size_t w = count_ ? last_ / 64 + 1 : 0; w <= word; ++w) before_[w] = count_;
    bits_[word] |= uint64_t{1} << (id % 64);
    last_ = id;
    ++count_;
    return true;
  }

  // The number `id` was given, or kNone.
  uint32_t number_of(uint32_t id) const {
    if (count_ == 0 || id > last_) return kNone;
    const uint64_t word = bits_[id / 64];
    const uint64_t bit = uint64_t{1} << (id % 64);
    if (!(word & bit)) return kNone;
    return before_[id / 64] + static_cast<uint32_t>(std::popcount(word & (bit - 1)));
  }

  uint32_t size() const { return count_; }

 private:
  size_t ids_ = 0;
  std::vector<uint64_t> bits_;    // id i numbered: bit i % 64 of word i / 64
  std::vector<uint32_t> before_;  // per word: the ids numbered before it
  uint32_t last_ = 0;             // the highest id numbered (with count_ > 0)
  uint32_t count_ = 0;
};

}  // namespace memstage::reports
