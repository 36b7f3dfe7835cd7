// The slots of the tracer's open-addressing tables (address_index.h, site_slots.h): in the
// tracer's own memory (tracer_map_table), probed linearly from each slot's home, emptied by
// backward shift (no tombstones: every probe chain stays unbroken) or, in a table whose
// slots' homes cost a cache miss to find, by tombstones the table writes itself (replace),
// twice the size once three quarters full (tombstones counted). `traits.used(slot)` says
// whether a slot holds anything (an empty one is a value-initialized Slot; a tombstone
// holds nothing) and `traits.home(slot, mask)` where its probe starts; a Traits may hold
// what it needs for that (traits()).
// Writer thread only.
#pragma once

#include <cstdint>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

template <class Slot, class Traits, uint64_t kFirstCapacity>
class ProbedSlots {
 public:
  static constexpr uint64_t kFirstSlots = kFirstCapacity;
  uint64_t size() const { return count_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t mask() const { return capacity_ - 1; }
  uint64_t next(uint64_t i) const { return (i + 1) & mask(); }
  Slot& operator[](uint64_t i) { return slots_[i]; }
  const Slot& operator[](uint64_t i) const { return slots_[i]; }
  Traits& traits() { return traits_; }

  // At most three quarters of the slots used.
  static bool fits(uint64_t count, uint64_t capacity) { return count * 4 <= capacity * 3; }
  // Room for one slot more, grown when three quarters are used; false when out of memory.
  bool make_room() { return !full() || grow(); }

  // Whether the next make_room grows the slots.
  bool full() const { return !fits(count_ + 1, capacity_); }

  // Every slot emptied, `capacity` of them (a power of two): for a table made anew from
  // what it indexes. False when out of memory, the slots as they were.
  bool empty_to(uint64_t capacity) {
    if (capacity != capacity_) {
      auto* fresh = static_cast<Slot*>(tracer_map_table(capacity * sizeof(Slot)));
      if (!fresh) return false;
      if (slots_) tracer_unmap_table(slots_, capacity_ * sizeof(Slot));
      slots_ = fresh;
      capacity_ = capacity;
    } else {
      for (uint64_t i = 0; i < capacity_; ++i) slots_[i] = Slot{};
    }
    count_ = 0;
    return true;
  }

  // Puts `slot` in the empty index `i`, found by probing from its home.
  void fill(uint64_t i, const Slot& slot) {
    slots_[i] = slot;
    ++count_;
  }
  // Puts `slot` in index `i` where a slot counted already is: a table that leaves
  // tombstones (its Traits::used false for them) writes them, and reuses them, this way.
  void replace(uint64_t i, const Slot& slot) { slots_[i] = slot; }

  // Empties index `i`: a later slot of its chain whose home lies at or before the hole moves
  // back into it, and the hole moves on to where it was.
  void remove(uint64_t i) {
    uint64_t hole = i;
    for (uint64_t j = next(i); traits_.used(slots_[j]); j = next(j)) {
      const uint64_t home = traits_.home(slots_[j], mask());
      const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --count_;
  }

  void clear() {
    if (slots_) tracer_unmap_table(slots_, capacity_ * sizeof(Slot));
    slots_ = nullptr;
    capacity_ = count_ = 0;
  }

 private:
  bool grow() {
    const uint64_t new_capacity = capacity_ ? capacity_ * 2 : kFirstCapacity;
    auto* bigger = static_cast<Slot*>(tracer_map_table(new_capacity * sizeof(Slot)));
    if (!bigger) return false;
    Slot* old = slots_;
    const uint64_t old_capacity = capacity_;
    slots_ = bigger;
    capacity_ = new_capacity;
    count_ = 0;  // the used slots moved: tombstones stay behind
    for (uint64_t i = 0; i < old_capacity; ++i) {
      if (!traits_.used(old[i])) continue;
      uint64_t j = traits_.home(old[i], mask());
      while (traits_.used(slots_[j])) j = next(j);
      slots_[j] = old[i];
      ++count_;
    }
    if (old) tracer_unmap_table(old, old_capacity * sizeof(Slot));
    return true;
  }

  Traits traits_{};
  Slot* slots_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t count_ = 0;
};

}  // namespace memstage::preload
