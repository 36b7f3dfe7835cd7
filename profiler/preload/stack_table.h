// Interns call stacks in process: each distinct stack is stored once and events carry
// its small id. The writer emits a stack's return addresses before the first event that
// uses it; symbolization happens offline.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

struct StackDef {
  const uint64_t* return_addresses;  // innermost first
  uint32_t depth;
};

uint64_t hash_stack(const uint64_t* return_addresses, uint32_t depth);

class StackTable {
 public:
  static constexpr uint32_t kMaxStacks = 1u << 24;
  static constexpr uint32_t kOverflowId = 0;  // the empty stack, also used when full

  bool init();
  // Thread-safe. Returns the id of this stack, adding it if new.
  uint32_t intern(const uint64_t* return_addresses, uint32_t depth, uint64_t hash);
  // Ids below this are complete and readable without a lock.
  uint32_t published() const { return count_.load(std::memory_order_acquire); }
  const StackDef& def(uint32_t id) const { return defs_[id]; }

  void lock() { pthread_mutex_lock(&mutex_); }
  void unlock() { pthread_mutex_unlock(&mutex_); }
  void reset_lock_after_fork() { pthread_mutex_init(&mutex_, nullptr); }

 private:
  struct IndexSlot {
    uint64_t hash;
    uint32_t id_plus_one;  // 0: empty slot
  };
  bool grow_index();

  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  StackDef* defs_ = nullptr;
  std::atomic<uint32_t> count_{0};
  IndexSlot* index_ = nullptr;  // open addressing, guarded by mutex_
  uint64_t index_slots_ = 0;
  BumpArena arena_;
};

}  // namespace memstage::preload
