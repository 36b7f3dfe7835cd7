// Sample mode: which live blocks were sampled, so that a free of one is recorded and the
// many frees of blocks never sampled cost almost nothing. Lock-free, allocation-free.
//
// Two tables: a counting filter (how many sampled blocks live in each bucket) that a free
// reads first, indexed by the address's bits 4-15, and the sampled addresses themselves,
// indexed by a hash of the address (open addressing, a freed one leaves a tombstone that a
// later insert reuses). Sampled blocks are rare (one per rate_bytes allocated), so almost
// every bucket counts zero and a free costs one load from a 16 KiB table; only a free in a
// bucket holding a sampled block searches the addresses. The freeing thread itself takes
// the address out and lowers the bucket, so a hot address that was sampled once is fast
// again at its next free.
#pragma once

#include <atomic>
#include <cstdint>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

class SampledBlocks {
 public:
  // 16 KiB: stays in a core's L1 cache beside the program's data (a 256 KiB table made
  // the churn benchmark's frees miss it).
  static constexpr uint32_t kBuckets = 1u << 12;
  static constexpr uint32_t kSlots = 1u << 16;  // 512 KiB, used only in sample mode
  static constexpr uint32_t kMaxProbes = 64;

  // At sample mode's start, before any add: the addresses' table, in the tracer's own
  // counted memory and made whole at once (tracer_map_table). Each sampled block lands on a
  // random page of it: one fault each otherwise. False when it cannot be had.
  bool init() {
    if (!slots_) slots_ = static_cast<std::atomic<uint64_t>*>(tracer_map_table(kSlots * sizeof(uint64_t)));
    return slots_ != nullptr;
  }

  // Before the block is handed to the program (any free of it comes after). False when
  // its neighbourhood of the table is full: the block is then not recorded at all.
  bool add(uint64_t address) {
    if (!slots_) return false;
    uint32_t slot = hash(address) & (kSlots - 1);
    for (uint32_t probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & (kSlots - 1)) {
      uint64_t held = slots_[slot].load(std::memory_order_relaxed);
      while (held == kEmpty || held == kTombstone) {
        if (slots_[slot].compare_exchange_weak(held, address, std::memory_order_relaxed)) {
          buckets_[bucket_of(address)].fetch_add(1, std::memory_order_relaxed);
          return true;
        }
      }
    }
    return false;
  }

  // False when `address` is surely no sampled block (its bucket counts none): one load.
  bool may_hold(uint64_t address) const {
    return buckets_[bucket_of(address)].load(std::memory_order_relaxed) != 0;
  }

  enum class Taken { kNone, kOwn, kInherited };
  // Whether `address` is a sampled block live (then forgotten): its free is recorded; and
  // whether the process inherited it over fork (mark_inherited), its parent's block.
  Taken take(uint64_t address) {
    if (__builtin_expect(!may_hold(address), 1)) return Taken::kNone;
    uint32_t slot = hash(address) & (kSlots - 1);
    for (uint32_t probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & (kSlots - 1)) {
      uint64_t held = slots_[slot].load(std::memory_order_relaxed);
      if (held == kEmpty) return Taken::kNone;
      // A block is freed once: no other thread takes the same address meanwhile.
      if ((held & ~kInheritedTag) == address &&
          slots_[slot].compare_exchange_strong(held, kTombstone, std::memory_order_relaxed)) {
        buckets_[bucket_of(address)].fetch_sub(1, std::memory_order_relaxed);
        return held & kInheritedTag ? Taken::kInherited : Taken::kOwn;
      }
    }
    return Taken::kNone;
  }

  // In a forked child, its only thread: every block sampled so far is its parent's.
  void mark_inherited() {
    for (uint32_t slot = 0; slots_ && slot < kSlots; ++slot) {
      const uint64_t held = slots_[slot].load(std::memory_order_relaxed);
      if (held != kEmpty && held != kTombstone) slots_[slot].store(held | kInheritedTag, std::memory_order_relaxed);
    }
  }

 private:
  static constexpr uint64_t kEmpty = 0;      // malloc never returns 0 or 1 for a block
  static constexpr uint64_t kTombstone = 1;
  static constexpr uint64_t kInheritedTag = 2;  // in a block's address, 16-aligned: bits 0-3 are free
  static uint64_t hash(uint64_t address) { return ((address >> 4) * 0x9e3779b97f4a7c15ull) >> 32; }
  // The address's own bits, not a hash: blocks near each other in the heap share the
  // filter's cache lines, and the load's address is two operations away from the block's
  // (docs/performance.md). Blocks at the same offset in their page (glibc's mmapped
  // chunks) share 16 buckets; a free that meets one that counts merely searches the table.
  static uint32_t bucket_of(uint64_t address) { return static_cast<uint32_t>((address >> 4) & (kBuckets - 1)); }

  std::atomic<uint32_t> buckets_[kBuckets] = {};
  std::atomic<uint64_t>* slots_ = nullptr;  // kSlots of them (init)
};

}  // namespace memstage::preload
