// Aggregate mode's index from a site's key, (stack, stage instance + 1), to its place in
// the aggregate's array of sites (aggregate.h): open addressing in 4-byte slots, the place
// and the top bits of the key's hash (compared before the site itself is read). Where a
// slot's probe starts is found from its site's key again (hash_of), which the index does
// only when it grows: a slot half the size of one holding the whole hash. A site the
// aggregate forgets leaves a tombstone, not a gap closed by shifting the slots after it
// back (each shift would read the moved slot's site to find its home: a cache miss each);
// inserts reuse tombstones, and the index made anew (empty_for, then the sites inserted in
// place order) or grown has none. Writer thread only; memory from tracer_map_table.
#pragma once

#include <cstdint>

#include "profiler/preload/probed_slots.h"
#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

class SiteSlots {
 public:
  // Places from 0 to kMaxPlaces - 1 (the bits of a slot left beside the hash's).
  static constexpr uint32_t kPlaceBits = 24;
  static constexpr uint32_t kMaxPlaces = (1u << kPlaceBits) - 1;

  static uint32_t hash(uint32_t stack, uint32_t stage_plus_one) {
    const uint64_t h = (static_cast<uint64_t>(stack) << 32 | stage_plus_one) * 0x9e3779b97f4a7c15ull;
    return static_cast<uint32_t>(h >> 32);
  }

  // The hash of the site at a place, as hash() gave it when the site was inserted.
  using HashOf = uint32_t (*)(const void* sites, uint32_t place);
  void use_hashes(const void* sites, HashOf hash_of) {
    slots_.traits().sites = sites;
    slots_.traits().hash_of = hash_of;
  }

  // The place of the site with this hash for which `same(place)` holds, or UINT32_MAX.
  template <class Same>
  uint32_t find(uint32_t hash, Same same) const {
    if (slots_.capacity() == 0) return UINT32_MAX;
    for (uint64_t i = hash & slots_.mask(); slots_[i]; i = slots_.next(i)) {
      if (same_top_bits(slots_[i], hash) && same(place_of(slots_[i]))) return place_of(slots_[i]);
    }
    return UINT32_MAX;
  }

  // Starts fetching the slot where the hash's probe starts (a cache miss in a table of
  // megabytes), for a find soon.
  void prefetch(uint32_t hash) const {
    if (slots_.capacity()) prefetch_line(&slots_[hash & slots_.mask()]);
  }
  // The place of the first slot on the hash's probe whose top bits are the hash's: most
  // likely the site find() will return (its site fetched ahead of it); UINT32_MAX if none.
  uint32_t likely_place(uint32_t hash) const {
    if (slots_.capacity() == 0) return UINT32_MAX;
    for (uint64_t i = hash & slots_.mask(); slots_[i]; i = slots_.next(i)) {
      if (same_top_bits(slots_[i], hash)) return place_of(slots_[i]);
    }
    return UINT32_MAX;
  }

  // A site not in it yet, its key already at its place; false when out of memory. The
  // first tombstone on the probe is taken: the key is in no slot past it.
  bool insert(uint32_t hash, uint32_t place) {
    if (!slots_.make_room()) return false;
    uint64_t i = hash & slots_.mask();
    while (holds_site(slots_[i])) i = slots_.next(i);
    const Slot slot = (hash >> kPlaceBits) << kPlaceBits | (place + 1);
    if (slots_[i]) {
      slots_.replace(i, slot);
    } else {
      slots_.fill(i, slot);
    }
    ++sites_;
    return true;
  }

  // Whether the next insert grows the index, which finds each slot's home from its site
  // (a read of the sites in no order: a cache miss a slot). Tombstones count: they
  // lengthen the probes as sites do.
  bool full() const { return slots_.full(); }
  // Empties the index, with room for `sites` sites without growing: for the aggregate to
  // insert its sites anew, read in place order. False when out of memory, nothing changed.
  bool empty_for(uint64_t sites) {
    uint64_t capacity = slots_.capacity() ? slots_.capacity() : Slots::kFirstSlots;
    while (!Slots::fits(sites + 1, capacity)) capacity *= 2;
    if (!slots_.empty_to(capacity)) return false;
    sites_ = 0;
    return true;
  }
  // Empties the index, its size kept (no memory asked for): for fewer sites than it held.
  void empty() {
    if (slots_.capacity()) slots_.empty_to(slots_.capacity());
    sites_ = 0;
  }
  // The sites in it (not the tombstones).
  uint64_t size() const { return sites_; }

  // The site's slot becomes a tombstone.
  void erase(uint32_t hash, uint32_t place) {
    if (slots_.capacity() == 0) return;
    for (uint64_t i = hash & slots_.mask(); slots_[i]; i = slots_.next(i)) {
      if (holds_site(slots_[i]) && place_of(slots_[i]) == place) {
        slots_.replace(i, kTombstone);
        --sites_;
        return;
      }
    }
  }

  void clear() {
    slots_.clear();
    sites_ = 0;
  }

 private:
  // 0: empty; else the hash's top bits over place + 1, or over 0 for a tombstone.
  using Slot = uint32_t;
  static constexpr Slot kTombstone = ~Slot{0} << kPlaceBits;
  static uint32_t place_of(Slot s) { return (s & kMaxPlaces) - 1; }
  static bool holds_site(Slot s) { return (s & kMaxPlaces) != 0; }
  static bool same_top_bits(Slot s, uint32_t hash) { return holds_site(s) && s >> kPlaceBits == hash >> kPlaceBits; }
  // Growing drops the tombstones (ProbedSlots moves the used slots only).
  struct Traits {
    const void* sites = nullptr;
    HashOf hash_of = nullptr;
    static bool used(Slot s) { return holds_site(s); }
    uint64_t home(Slot s, uint64_t mask) const { return hash_of(sites, place_of(s)) & mask; }
  };
  using Slots = ProbedSlots<Slot, Traits, 1u << 10>;
  Slots slots_;
  uint64_t sites_ = 0;
};

}  // namespace memstage::preload
