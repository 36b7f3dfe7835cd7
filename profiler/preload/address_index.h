// The writer's map from a live block's address to what the writer knows of it: in full
// mode its allocation info id, so that a free is written as the info of the block it
// frees (trace_format.h); in aggregate mode its size and site (aggregate.h). Writer
// thread only.
#pragma once

#include <cstdint>

#include "profiler/preload/probed_slots.h"

namespace memstage::preload {

template <class Value>
class AddressMap {
 public:
  // Records that `address` holds a block described by `index`, replacing what it held before.
  void put(uint64_t address, const Value& index) {
    if (!slots_.make_room()) return;
    uint64_t i = home_of(address, slots_.mask());
    while (slots_[i].address != 0 && slots_[i].address != address) i = slots_.next(i);
    if (slots_[i].address == 0) {
      slots_.fill(i, Slot{address, index});
    } else {
      slots_[i].index = index;
    }
  }

  // What the block at `address` is, removed from the map; false if unknown.
  bool take(uint64_t address, Value& index) {
    if (slots_.capacity() == 0) return false;
    uint64_t i = home_of(address, slots_.mask());
    while (slots_[i].address != address) {
      if (slots_[i].address == 0) return false;
      i = slots_.next(i);
    }
    index = slots_[i].index;
    slots_.remove(i);
    return true;
  }

  uint64_t size() const { return slots_.size(); }

  // Starts fetching the slot where `address` is put or taken soon (their cache miss).
  void prefetch(uint64_t address) const {
    if (slots_.capacity()) prefetch_line(&slots_[home_of(address, slots_.mask())]);
  }

  void clear() { slots_.clear(); }

 private:
  struct Slot {
    uint64_t address;  // 0: empty (malloc never returns 0 for a live block)
    Value index;
  };
  static uint64_t home_of(uint64_t address, uint64_t mask) {
    return ((address >> 4) * 0x9e3779b97f4a7c15ull >> 20) & mask;
  }
  struct Traits {
    static bool used(const Slot& s) { return s.address != 0; }
    static uint64_t home(const Slot& s, uint64_t mask) { return home_of(s.address, mask); }
  };

  // From 16 KiB: a map that stays small (sample mode's few sampled blocks live at once)
  // touches a few pages, not the 1 MiB it started at before.
  ProbedSlots<Slot, Traits, 1u << 10> slots_;
};

using AddressIndex = AddressMap<uint64_t>;

}  // namespace memstage::preload
