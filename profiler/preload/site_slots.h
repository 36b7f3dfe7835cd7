// Aggregate mode's index from a site's key, (stack, stage instance + 1), to its place in
// the aggregate's array of sites (aggregate.h): open addressing in 8-byte slots, the place
// and the key's hash (compared before the site itself is read). Sites are removed when the
// aggregate forgets them, so it holds the sites kept, not every one ever met.
// Writer thread only; memory from tracer_map_table.
#pragma once

#include <cstdint>

#include "profiler/preload/tracer_memory.h"

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
    if (capacity_ == 0) return UINT32_MAX;
    for (uint64_t i = hash & (capacity_ - 1); slots_[i].place_plus_one; i = (i + 1) & (capacity_ - 1)) {
      if (slots_[i].hash == hash && same(slots_[i].place_plus_one - 1)) return slots_[i].place_plus_one - 1;
    }
    return UINT32_MAX;
  }

  // A site not in it yet; false when out of memory.
  bool insert(uint32_t hash, uint32_t place) {
    if ((count_ + 1) * 4 > capacity_ * 3 && !grow()) return false;
    put(Slot{place + 1, hash});
    ++count_;
    return true;
  }

  void erase(uint32_t hash, uint32_t place) {
    uint64_t i = hash & (capacity_ - 1);
    while (slots_[i].place_plus_one != place + 1) {
      if (!slots_[i].place_plus_one) return;
      i = (i + 1) & (capacity_ - 1);
    }
    // Backward-shift deletion, as address_index.h: no tombstones.
    uint64_t hole = i;
    for (uint64_t j = (i + 1) & (capacity_ - 1); slots_[j].place_plus_one; j = (j + 1) & (capacity_ - 1)) {
      const uint64_t home = slots_[j].hash & (capacity_ - 1);
      const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{0, 0};
    --count_;
  }

  void clear() {
    if (slots_) tracer_unmap_table(slots_, capacity_ * sizeof(Slot));
    slots_ = nullptr;
    capacity_ = count_ = 0;
  }

 private:
  struct Slot {
    uint32_t place_plus_one;  // 0: empty
    uint32_t hash;
  };

  void put(Slot slot) {
    uint64_t i = slot.hash & (capacity_ - 1);
    while (slots_[i].place_plus_one) i = (i + 1) & (capacity_ - 1);
    slots_[i] = slot;
  }

  bool grow() {
    return grow_table(
        slots_, capacity_, 1u << 9, [](const Slot& s) { return s.place_plus_one != 0; },
        [this](const Slot& s) { put(s); });
  }

  Slot* slots_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t count_ = 0;
};

}  // namespace memstage::preload
