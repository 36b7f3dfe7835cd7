// The writer's numbering of allocation infos, (size, stack, stage instance) triples:
// every allocation is written as its info's id (trace_format.h, kAllocInfo).
// Writer thread only.
#pragma once

#include <cstdint>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

class AllocationInfos {
 public:
  // The id of this triple; `added` says it is new and its definition must be written.
  // UINT32_MAX when out of memory.
  uint32_t id_of(uint64_t size, uint32_t stack, uint32_t stage_plus_one, bool& added) {
    added = false;
    if ((count_ + 1) * 4 > capacity_ * 3 && !grow()) return UINT32_MAX;
    uint64_t i = slot_of(size, stack, stage_plus_one);
    for (; slots_[i].id_plus_one; i = (i + 1) & (capacity_ - 1)) {
      const Slot& s = slots_[i];
      if (s.size == size && s.stack == stack && s.stage_plus_one == stage_plus_one) return s.id_plus_one - 1;
    }
    slots_[i] = Slot{size, stack, stage_plus_one, ++count_};
    added = true;
    return count_ - 1;
  }

  void clear() {
    if (slots_) tracer_unmap(slots_, capacity_ * sizeof(Slot));
    slots_ = nullptr;
    capacity_ = count_ = 0;
  }

 private:
  struct Slot {
    uint64_t size;
    uint32_t stack;
    uint32_t stage_plus_one;
    uint32_t id_plus_one;  // 0: empty
  };

  static uint64_t hash(uint64_t size, uint32_t stack, uint32_t stage_plus_one) {
    uint64_t h = size * 0x9e3779b97f4a7c15ull;
    h ^= (static_cast<uint64_t>(stack) << 20 | stage_plus_one) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
  }
  uint64_t slot_of(uint64_t size, uint32_t stack, uint32_t stage_plus_one) const {
    return hash(size, stack, stage_plus_one) & (capacity_ - 1);
  }

  bool grow() {
    const uint64_t new_capacity = capacity_ ? capacity_ * 2 : 1u << 14;
    auto* bigger = static_cast<Slot*>(tracer_map(new_capacity * sizeof(Slot)));
    if (!bigger) return false;
    for (uint64_t i = 0; i < capacity_; ++i) {
      if (!slots_[i].id_plus_one) continue;
      uint64_t j = hash(slots_[i].size, slots_[i].stack, slots_[i].stage_plus_one) & (new_capacity - 1);
      while (bigger[j].id_plus_one) j = (j + 1) & (new_capacity - 1);
      bigger[j] = slots_[i];
    }
    if (slots_) tracer_unmap(slots_, capacity_ * sizeof(Slot));
    slots_ = bigger;
    capacity_ = new_capacity;
    return true;
  }

  Slot* slots_ = nullptr;
  uint64_t capacity_ = 0;
  uint32_t count_ = 0;
};

}  // namespace memstage::preload
