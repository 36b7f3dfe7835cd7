// The writer's numbering of allocation infos, (size, stack, stage instance, call): every
// allocation is written as its info's id (trace_format.h, kAllocInfo, kCallAllocInfo).
// Writer thread only.
#pragma once

#include <cstdint>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

class AllocationInfos {
 public:
  // The id of this triple; `added` says it is new and its definition must be written.
  // UINT32_MAX when out of memory. Remembers a bounded number of triples (the most
  // recently added where they collide): a triple forgotten and met again is defined
  // again under a new id, which the trace allows. A program with a million distinct
  // stacks (Python importing torch) would otherwise keep tens of MB here.
  // `call`: the call and its alignment (kCallAllocInfo's field), which a call site keeps:
  // left out of the hash.
  uint32_t id_of(uint64_t size, uint32_t stack, uint32_t stage_plus_one, uint16_t call, bool& added) {
    added = false;
    if (!slots_ && !allocate()) return UINT32_MAX;
    if (count_ == UINT32_MAX - 1) return UINT32_MAX;
    const uint64_t home = hash(size, stack, stage_plus_one) & (kSlots - 1);
    uint64_t i = home;
    for (uint32_t probe = 0; probe < kProbes; ++probe, i = (i + 1) & (kSlots - 1)) {
      const Slot& s = slots_[i];
      if (!s.id_plus_one) break;
      if (s.size == size && s.stack == stack && s.stage_plus_one == stage_plus_one && s.call == call) {
        return s.id_plus_one - 1;
      }
    }
    if (slots_[i].id_plus_one) i = home;  // all probed slots taken: the newest replaces the home one
    slots_[i] = Slot{size, stack, stage_plus_one, ++count_, call};
    added = true;
    return count_ - 1;
  }

  // Starts fetching the home slot of a triple looked up soon (id_of's cache miss).
  void prefetch(uint64_t size, uint32_t stack, uint32_t stage_plus_one) const {
    if (slots_) prefetch_line(&slots_[hash(size, stack, stage_plus_one) & (kSlots - 1)]);
  }

  // The ids given so far: the next one.
  uint32_t count() const { return count_; }

  void clear() {
    if (slots_) tracer_unmap(slots_, kSlots * sizeof(Slot));
    slots_ = nullptr;
    count_ = 0;
  }

 private:
  static constexpr uint64_t kSlots = 1u << 16;  // 1.5 MiB
  static constexpr uint32_t kProbes = 8;
  struct Slot {
    uint64_t size;
    uint32_t stack;
    uint32_t stage_plus_one;
    uint32_t id_plus_one;  // 0: empty
    uint16_t call;         // in what was padding: the slot stays 24 bytes
  };
  static_assert(sizeof(Slot) == 24);

  static uint64_t hash(uint64_t size, uint32_t stack, uint32_t stage_plus_one) {
    uint64_t h = size * 0x9e3779b97f4a7c15ull;
    h ^= (static_cast<uint64_t>(stack) << 20 | stage_plus_one) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
  }

  bool allocate() {
    slots_ = static_cast<Slot*>(tracer_map(kSlots * sizeof(Slot)));
    return slots_ != nullptr;
  }

  Slot* slots_ = nullptr;
  uint32_t count_ = 0;
};

}  // namespace memstage::preload
