// Aggregate mode's index from a site's key, (stack, stage instance + 1), to its place in
// the aggregate's array of sites (aggregate.h): open addressing in 8-byte slots, the place
// and the key's hash (compared before the site itself is read). Sites are removed when the
// aggregate forgets them, so it holds the sites kept, not every one ever met.
// Writer thread only; memory from tracer_map_table.
#pragma once

#include <cstdint>

#include "profiler/preload/probed_slots.h"

namespace memstage::preload {

class SiteSlots {
 public:
  static uint32_t hash(uint32_t stack, uint32_t stage_plus_one) {
    const uint64_t h = (static_cast<uint64_t>(stack) << 32 | stage_plus_one) * 0x9e3779b97f4a7c15ull;
    return static_cast<uint32_t>(h >> 32);
  }

  // The place of the site with this hash for which `same(place)` holds, or UINT32_MAX.
  template <class Same>
  uint32_t find(uint32_t hash, Same same) const {
    if (slots_.capacity() == 0) return UINT32_MAX;
    for (uint64_t i = hash & slots_.mask(); slots_[i].place_plus_one; i = slots_.next(i)) {
      if (slots_[i].hash == hash && same(slots_[i].place_plus_one - 1)) return slots_[i].place_plus_one - 1;
    }
    return UINT32_MAX;
  }

  // A site not in it yet; false when out of memory.
  bool insert(uint32_t hash, uint32_t place) {
    if (!slots_.make_room()) return false;
    uint64_t i = hash & slots_.mask();
    while (slots_[i].place_plus_one) i = slots_.next(i);
    slots_.fill(i, Slot{place + 1, hash});
    return true;
  }

  void erase(uint32_t hash, uint32_t place) {
    if (slots_.capacity() == 0) return;
    uint64_t i = hash & slots_.mask();
    while (slots_[i].place_plus_one != place + 1) {
      if (!slots_[i].place_plus_one) return;
      i = slots_.next(i);
    }
    slots_.remove(i);
  }

  void clear() { slots_.clear(); }

 private:
  struct Slot {
    uint32_t place_plus_one;  // 0: empty
    uint32_t hash;
  };
  struct Traits {
    static bool used(const Slot& s) { return s.place_plus_one != 0; }
    static uint64_t home(const Slot& s, uint64_t mask) { return s.hash & mask; }
  };
  ProbedSlots<Slot, Traits, 1u << 9> slots_;
};

}  // namespace memstage::preload
