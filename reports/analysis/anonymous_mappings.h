// Anonymous mappings made outside malloc, one aggregator of the analysis
// (reports/analysis): mmap, munmap, mremap and mprotect replayed as address ranges.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>

namespace memstage::reports {

// Anonymous mappings made outside malloc (mmap/munmap/mremap/mprotect), as address
// ranges. Only accessible ones are memory: a PROT_NONE or MAP_NORESERVE reservation is
// address space until mprotect opens part of it.
class AnonymousMappings {
 public:
  void map(uint64_t address, uint64_t length, bool accessible) {
    unmap(address, length);
    ranges_[address] = Range{address + length, accessible};
    if (accessible) bytes_ += length;
  }
  void unmap(uint64_t address, uint64_t length) {
    const uint64_t end = address + length;
    split_at(address);
    split_at(end);
    for (auto it = ranges_.lower_bound(address); it != ranges_.end() && it->first < end;) {
      if (it->second.accessible) bytes_ -= it->second.end - it->first;
      it = ranges_.erase(it);
    }
  }
  // The part of [address, address + length) that is mapped becomes (in)accessible.
  void protect(uint64_t address, uint64_t length, bool accessible) {
    const uint64_t end = address + length;
    split_at(address);
    split_at(end);
    for (auto it = ranges_.lower_bound(address); it != ranges_.end() && it->first < end; ++it) {
      if (it->second.accessible == accessible) continue;
      const uint64_t size = it->second.end - it->first;
      if (accessible) {
        bytes_ += size;
      } else {
        bytes_ -= size;
      }
      it->second.accessible = accessible;
    }
  }
  // Whether `address` is in a mapping, and if so whether that part is accessible.
  std::optional<bool> accessible_at(uint64_t address) const {
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin() || std::prev(it)->second.end <= address) return std::nullopt;
    return std::prev(it)->second.accessible;
  }
  uint64_t bytes() const { return bytes_; }  // accessible bytes

 private:
  struct Range {
    uint64_t end;
    bool accessible;
  };
  // No range straddles `at` afterwards.
  void split_at(uint64_t at) {
    auto it = ranges_.upper_bound(at);
    if (it == ranges_.begin()) return;
    --it;
    if (it->first < at && it->second.end > at) {
      const Range tail{it->second.end, it->second.accessible};
      it->second.end = at;
      ranges_.emplace(at, tail);
    }
  }
  std::map<uint64_t, Range> ranges_;
  uint64_t bytes_ = 0;
};

}  // namespace memstage::reports
