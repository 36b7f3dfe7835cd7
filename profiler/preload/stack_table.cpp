#include "profiler/preload/stack_table.h"

#include <cstring>

namespace memstage::preload {

uint64_t hash_stack(const uint64_t* return_addresses, uint32_t depth) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
  for (uint32_t i = 0; i < depth; ++i) {
    h ^= return_addresses[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h | 1;  // never 0, so 0 can mark an empty cache entry
}

bool StackTable::init() {
  defs_ = static_cast<StackDef*>(tracer_map(sizeof(StackDef) * kMaxStacks));
  index_slots_ = 1 << 16;
  index_ = static_cast<IndexSlot*>(tracer_map(sizeof(IndexSlot) * index_slots_));
  if (!defs_ || !index_) return false;
  defs_[kOverflowId] = StackDef{nullptr, 0};
  count_.store(1, std::memory_order_release);
  return true;
}

bool StackTable::grow_index() {
  const uint64_t new_slots = index_slots_ * 2;
  auto* bigger = static_cast<IndexSlot*>(tracer_map(sizeof(IndexSlot) * new_slots));
  if (!bigger) return false;
  for (uint64_t i = 0; i < index_slots_; ++i) {
    if (!index_[i].id_plus_one) continue;
    uint64_t j = index_[i].hash & (new_slots - 1);
    while (bigger[j].id_plus_one) j = (j + 1) & (new_slots - 1);
    bigger[j] = index_[i];
  }
  tracer_unmap(index_, sizeof(IndexSlot) * index_slots_);
  index_ = bigger;
  index_slots_ = new_slots;
  return true;
}

uint32_t StackTable::intern(const uint64_t* return_addresses, uint32_t depth, uint64_t hash) {
  if (depth == 0 || !defs_) return kOverflowId;
  lock();
  uint64_t j = hash & (index_slots_ - 1);
  for (; index_[j].id_plus_one; j = (j + 1) & (index_slots_ - 1)) {
    if (index_[j].hash != hash) continue;
    const StackDef& d = defs_[index_[j].id_plus_one - 1];
    if (d.depth == depth &&
        memcmp(d.return_addresses, return_addresses, depth * sizeof(uint64_t)) == 0) {
      const uint32_t id = index_[j].id_plus_one - 1;
      unlock();
      return id;
    }
  }
  const uint32_t id = count_.load(std::memory_order_relaxed);
  auto* copy = static_cast<uint64_t*>(arena_.allocate(depth * sizeof(uint64_t)));
  if (id >= kMaxStacks || !copy) {
    unlock();
    return kOverflowId;
  }
  memcpy(copy, return_addresses, depth * sizeof(uint64_t));
  defs_[id] = StackDef{copy, depth};
  index_[j] = IndexSlot{hash, id + 1};
  count_.store(id + 1, std::memory_order_release);
  if ((id + 1) * 2 > index_slots_) grow_index();
  unlock();
  return id;
}

}  // namespace memstage::preload
