// Aggregate mode's live blocks: a block's address -> its site's place and its size, in
// 12-byte slots where full mode's index of live blocks (address_index.h) takes 16: the
// address's low 48 bits (a user-space address on x86-64 and arm64), the place's 24 bits
// (SiteSlots::kMaxPlaces) and the size's 24. A block of 16 MiB or more, or at an address
// past 48 bits, is kept whole in a map beside them (few are). Writer thread only.
#pragma once

#include <cstdint>

#include "profiler/preload/address_index.h"
#include "profiler/preload/probed_slots.h"
#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

class BlockSlots {
 public:
  static constexpr uint64_t kMaxPackedBytes = (1u << 24) - 1;
  static constexpr uint64_t kAddressMask = (uint64_t{1} << 48) - 1;

  // Records that `address` holds a block of `size` bytes of the site at `place`, replacing
  // what it held before. False when out of memory for the slots.
  bool put(uint64_t address, uint32_t place, uint64_t size) {
    const bool packed = size <= kMaxPackedBytes && (address & ~kAddressMask) == 0;
    // The address may be held in the other table (a block whose free was missed).
    BlockAside discarded;
    if (packed) {
      if (aside_.size()) aside_.take(address, discarded);
      return put_packed(address, place, size);
    }
    uint32_t discarded_place;
    uint64_t discarded_size;
    if (slots_.size()) take_packed(address, discarded_place, discarded_size);
    aside_.put(address, BlockAside{place, size});
    return true;
  }

  // The block at `address`, removed; false if unknown.
  bool take(uint64_t address, uint32_t& place, uint64_t& size) {
    if ((address & ~kAddressMask) == 0 && take_packed(address, place, size)) return true;
    BlockAside aside;
    if (!aside_.size() || !aside_.take(address, aside)) return false;
    place = aside.place;
    size = aside.size;
    return true;
  }

  void clear() {
    slots_.clear();
    aside_.clear();
  }

  uint64_t size() const { return slots_.size() + aside_.size(); }

  // Starts fetching the slot where `address` is put or taken soon (a cache miss in a
  // table of megabytes).
  void prefetch(uint64_t address) const {
    if (slots_.capacity()) prefetch_line(&slots_[home_of(address, slots_.mask())]);
  }
  // The place of the packed block at `address`, left in place (to fetch its site ahead of
  // the free); UINT32_MAX if there is none.
  uint32_t place_at(uint64_t address) const {
    if (slots_.capacity() == 0 || (address & ~kAddressMask) != 0 || address == 0) return UINT32_MAX;
    for (uint64_t i = home_of(address, slots_.mask()); slots_[i].address() != 0; i = slots_.next(i)) {
      if (slots_[i].address() == address) return place_of(slots_[i]);
    }
    return UINT32_MAX;
  }

 private:
  struct BlockAside {
    uint32_t place = 0;
    uint64_t size = 0;
  };
  // low: the address, the place's low 16 bits above it; high: the place's top 8 bits,
  // the size above them. Empty: address 0 (malloc never returns 0 for a live block).
  struct __attribute__((packed)) Slot {
    uint64_t low;
    uint32_t high;
    uint64_t address() const { return low & kAddressMask; }
  };
  static_assert(sizeof(Slot) == 12);
  static uint32_t place_of(const Slot& slot) { return static_cast<uint32_t>(slot.low >> 48) | (slot.high & 0xff) << 16; }
  static uint64_t home_of(uint64_t address, uint64_t mask) {
    return ((address >> 4) * 0x9e3779b97f4a7c15ull >> 20) & mask;
  }
  struct Traits {
    static bool used(const Slot& s) { return s.address() != 0; }
    static uint64_t home(const Slot& s, uint64_t mask) { return home_of(s.address(), mask); }
  };

  bool put_packed(uint64_t address, uint32_t place, uint64_t size) {
    if (!slots_.make_room()) return false;
    uint64_t i = home_of(address, slots_.mask());
    while (slots_[i].address() != 0 && slots_[i].address() != address) i = slots_.next(i);
    const Slot slot{address | static_cast<uint64_t>(place & 0xffff) << 48,
                    (place >> 16 & 0xff) | static_cast<uint32_t>(size) << 8};
    if (slots_[i].address() == 0) {
      slots_.fill(i, slot);
    } else {
      slots_[i] = slot;
    }
    return true;
  }

  bool take_packed(uint64_t address, uint32_t& place, uint64_t& size) {
    if (slots_.capacity() == 0) return false;
    uint64_t i = home_of(address, slots_.mask());
    while (slots_[i].address() != address) {
      if (slots_[i].address() == 0) return false;
      i = slots_.next(i);
    }
    const Slot slot = slots_[i];
    place = place_of(slot);
    size = slot.high >> 8;
    slots_.remove(i);
    return true;
  }

  ProbedSlots<Slot, Traits, 1u << 10> slots_;
  AddressMap<BlockAside> aside_;
};

}  // namespace memstage::preload
