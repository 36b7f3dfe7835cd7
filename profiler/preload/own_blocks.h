// Stats and sample modes in a forked child: the blocks the child allocated itself, so that a
// free of any other block is known as a free of its inheritance (its parent's block, still
// live in the parent) and left out, as full mode leaves out a free its trace never saw
// allocated (docs/jobs.md). Only a forked child keeps it (Recording::kCountedChild); the
// parent's fast path never reads it.
//
// The addresses in 64 shards by hash, each an open-addressing table (probed_slots.h) under
// its own spin lock: the child's threads rarely meet on one. Callers hold the re-entry guard,
// which defers signals, so a handler never spins on a lock its own thread holds.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

#include "profiler/preload/probed_slots.h"

namespace memstage::preload {

class OwnBlocks {
 public:
  // In the forked child, its only thread, before any call is counted: the table inherited
  // from a parent that was itself a child is the parent's, let go.
  void start_in_child() {
    for (Shard& shard : shards_) {
      shard.lock.store(0, std::memory_order_relaxed);
      shard.slots.clear();
    }
    active_.store(true, std::memory_order_relaxed);
    gave_up_unwritten_.store(false, std::memory_order_relaxed);
  }
  // False after a shard could not grow (out of memory): the frees are then counted as
  // before the fork, every one against the child (kInheritedFreesUntold says so).
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // True once after the table gave up: the trace is to say so (kInheritedFreesUntold).
  bool take_gave_up() { return gave_up_unwritten_.exchange(false, std::memory_order_relaxed); }

  // A block the child was handed. False when it could not be kept: the table gives up.
  bool add(uint64_t address) {
    Shard& shard = shard_of(address);
    Locked hold(shard);
    if (!shard.slots.make_room()) {
      if (active_.exchange(false, std::memory_order_relaxed)) gave_up_unwritten_.store(true, std::memory_order_relaxed);
      return false;
    }
    uint64_t i = Traits::home(address, shard.slots.mask());
    while (Traits::used(shard.slots[i]) && shard.slots[i] != address) i = shard.slots.next(i);
    if (!Traits::used(shard.slots[i])) shard.slots.fill(i, address);
    return true;
  }

  // Whether `address` is a block the child allocated (then forgotten): false for its
  // inheritance.
  bool take(uint64_t address) {
    Shard& shard = shard_of(address);
    Locked hold(shard);
    if (!shard.slots.capacity()) return false;
    for (uint64_t i = Traits::home(address, shard.slots.mask()); Traits::used(shard.slots[i]); i = shard.slots.next(i)) {
      if (shard.slots[i] == address) {
        shard.slots.remove(i);
        return true;
      }
    }
    return false;
  }

 private:
  struct Traits {
    static bool used(uint64_t address) { return address != 0; }  // malloc never returns 0 for a block
    static uint64_t home(uint64_t address, uint64_t mask) { return ((address >> 4) * 0x9e3779b97f4a7c15ull >> 20) & mask; }
  };
  static constexpr uint32_t kShards = 64;
  struct alignas(64) Shard {
    std::atomic<uint32_t> lock{0};
    ProbedSlots<uint64_t, Traits, 512> slots;
  };
  class Locked {
   public:
    explicit Locked(Shard& shard) : shard_(shard) {
      // A holder that lost its core would keep a spinner from it for its whole turn.
      for (uint32_t tries = 1; shard_.lock.exchange(1, std::memory_order_acquire); ++tries) {
        if (tries % 64 == 0) sched_yield();
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      }
    }
    ~Locked() { shard_.lock.store(0, std::memory_order_release); }

   private:
    Shard& shard_;
  };
  // The high bits of the hash, not the slots' low ones: a shard's table probes with the rest.
  Shard& shard_of(uint64_t address) { return shards_[((address >> 4) * 0x9e3779b97f4a7c15ull) >> 58]; }

  Shard shards_[kShards];
  std::atomic<bool> active_{false};
  std::atomic<bool> gave_up_unwritten_{false};
};

}  // namespace memstage::preload
