// The writer's map from a live block's address to what the writer knows of it: in full
// mode its allocation info id, so that a free is written as the info of the block it
// frees (trace_format.h); in aggregate mode its size and site (aggregate.h). Writer
// thread only.
#pragma once

#include <cstdint>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

template <class Value>
class AddressMap {
 public:
  // Records that `address` holds a block described by `index`, replacing what it held before.
  void put(uint64_t address, const Value& index) {
    if ((count_ + 1) * 4 > capacity_ * 3 && !grow()) return;
    uint64_t i = slot_of(address);
    while (slots_[i].address != 0 && slots_[i].address != address) i = (i + 1) & (capacity_ - 1);
    if (slots_[i].address == 0) ++count_;
    slots_[i] = Slot{address, index};
  }

  // What the block at `address` is, removed from the map; false if unknown.
  bool take(uint64_t address, Value& index) {
    if (capacity_ == 0) return false;
    uint64_t i = slot_of(address);
    while (slots_[i].address != address) {
      if (slots_[i].address == 0) return false;
      i = (i + 1) & (capacity_ - 1);
    }
    index = slots_[i].index;
    // Backward-shift deletion keeps every probe chain unbroken without tombstones.
    uint64_t hole = i;
    for (uint64_t j = (i + 1) & (capacity_ - 1); slots_[j].address != 0; j = (j + 1) & (capacity_ - 1)) {
      const uint64_t home = slot_of(slots_[j].address);
      const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{0, {}};
    --count_;
    return true;
  }

  uint64_t size() const { return count_; }

  // Starts fetching the slot where `address` is put or taken soon (their cache miss).
  void prefetch(uint64_t address) const {
    if (capacity_) prefetch_line(&slots_[slot_of(address)]);
  }

  void clear() {
    if (slots_) tracer_unmap_table(slots_, capacity_ * sizeof(Slot));
    slots_ = nullptr;
    capacity_ = count_ = 0;
  }

 private:
  struct Slot {
    uint64_t address;  // 0: empty (malloc never returns 0 for a live block)
    Value index;
  };

  uint64_t slot_of(uint64_t address) const {
    return ((address >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (capacity_ - 1);
  }

  bool grow() {
    // From 16 KiB: a map that stays small (sample mode's few sampled blocks live at once)
    // touches a few pages, not the 1 MiB it started at before.
    return grow_table(
        slots_, capacity_, 1u << 10, [](const Slot& s) { return s.address != 0; },
        [this](const Slot& s) {
          uint64_t j = slot_of(s.address);
          while (slots_[j].address != 0) j = (j + 1) & (capacity_ - 1);
          slots_[j] = s;
        });
  }

  Slot* slots_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t count_ = 0;
};

using AddressIndex = AddressMap<uint64_t>;

}  // namespace memstage::preload
