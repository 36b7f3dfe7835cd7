#include "profiler/preload/stack_table.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

uint64_t StackTable::hash(uint32_t parent, uint64_t return_address) {
  uint64_t h = (return_address ^ (static_cast<uint64_t>(parent) << 40) ^ parent) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

bool StackTable::init() {
  if (index_.load(std::memory_order_relaxed)) return true;
  constexpr uint64_t kFirstSlots = 1u << 14;
  auto* index = static_cast<Index*>(tracer_map(index_bytes(kFirstSlots)));
  auto* first = static_cast<Block*>(tracer_map(sizeof(Block)));
  if (!index || !first) return false;
  index->slot_count = kFirstSlots;
  first->addresses[kRootId] = 0;
  first->parents[kRootId] = kRootId;
  blocks_[0].store(first, std::memory_order_release);
  index_.store(index, std::memory_order_release);
  count_.store(1, std::memory_order_release);
  return true;
}

uint64_t StackTable::home_slot(uint64_t h, uint64_t slot_count) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * slot_count) >> 64);
}

uint32_t StackTable::find(const Index* index, uint32_t parent, uint64_t return_address, uint64_t h) const {
  const uint64_t slot_count = index->slot_count;
  for (uint64_t j = home_slot(h, slot_count);; j = j + 1 == slot_count ? 0 : j + 1) {
    const uint32_t slot = index->slots[j].load(std::memory_order_acquire);
    if (slot == 0) return 0;
    if (!slot_may_hold(slot, h)) continue;
    const uint32_t id = slot & kIdMask;
    const Block* b = block(id);
    if (b->addresses[id % kBlockNodes] == return_address && b->parents[id % kBlockNodes] == parent) return id;
  }
}

bool StackTable::grow_index_locked() {
  Index* old = index_.load(std::memory_order_relaxed);
  const uint64_t slots = old->slot_count + old->slot_count / 2;
  auto* bigger = static_cast<Index*>(tracer_map(index_bytes(slots)));
  if (!bigger) return false;
  bigger->slot_count = slots;
  const uint32_t n = count_.load(std::memory_order_relaxed);
  for (uint32_t id = 1; id < n; ++id) {
    const uint64_t h = hash(parent(id), return_address(id));
    uint64_t j = home_slot(h, slots);
    while (bigger->slots[j].load(std::memory_order_relaxed)) j = j + 1 == slots ? 0 : j + 1;
    bigger->slots[j].store(slot_value(id, h), std::memory_order_relaxed);
  }
  index_.store(bigger, std::memory_order_release);
  // A lookup may still be reading the old index: its slots go back to the kernel (reads
  // then see empty slots, a miss, and ask again under the mutex) but stay mapped. The
  // first page, with slot_count, stays as it is.
  constexpr uint64_t kPage = 4096;
  const uint64_t bytes = index_bytes(old->slot_count);
  if (bytes > 2 * kPage) {
    syscall(SYS_madvise, reinterpret_cast<uint8_t*>(old) + kPage, (bytes - kPage) & ~(kPage - 1), MADV_DONTNEED);
  }
  return true;
}

uint32_t StackTable::add_locked(uint32_t parent_id, uint64_t return_address, uint64_t h) {
  const uint32_t id = count_.load(std::memory_order_relaxed);
  if (id >= kMaxNodes) return kRootId;
  Index* index = index_.load(std::memory_order_relaxed);
  if ((id + 1) * 4 > index->slot_count * 3) {
    // Grown before the node is added; if that fails, the index takes it up to 7/8 full.
    if (grow_index_locked()) {
      index = index_.load(std::memory_order_relaxed);
    } else if ((id + 1) * 8 > index->slot_count * 7) {
      return kRootId;
    }
  }
  Block* b = blocks_[id / kBlockNodes].load(std::memory_order_relaxed);
  if (!b) {
    b = static_cast<Block*>(tracer_map(sizeof(Block)));
    if (!b) return kRootId;
    blocks_[id / kBlockNodes].store(b, std::memory_order_release);
  }
  b->addresses[id % kBlockNodes] = return_address;
  b->parents[id % kBlockNodes] = parent_id;
  // Published (for the writer) before it can be found (by the threads whose events the
  // writer then drains).
  count_.store(id + 1, std::memory_order_release);
  const uint64_t slot_count = index->slot_count;
  uint64_t j = home_slot(h, slot_count);
  while (index->slots[j].load(std::memory_order_relaxed)) j = j + 1 == slot_count ? 0 : j + 1;
  index->slots[j].store(slot_value(id, h), std::memory_order_release);
  return id;
}

uint32_t StackTable::intern(uint32_t parent_id, uint64_t return_address) {
  const Index* index = index_.load(std::memory_order_acquire);
  if (!index) return kRootId;
  const uint64_t h = hash(parent_id, return_address);
  if (const uint32_t id = find(index, parent_id, return_address, h)) return id;
  lock();
  uint32_t id = find(index_.load(std::memory_order_relaxed), parent_id, return_address, h);
  if (!id) id = add_locked(parent_id, return_address, h);
  unlock();
  return id;
}

uint32_t StackTable::intern_stack(const uint64_t* return_addresses, uint32_t depth) {
  uint32_t node = kRootId;
  for (uint32_t i = depth; i > 0; --i) {
    node = intern(node, return_addresses[i - 1]);
    if (node == kRootId) return kRootId;  // full
  }
  return node;
}

uint32_t LastStack::intern(StackTable& table, const uint64_t* return_addresses, uint32_t new_depth) {
  if (new_depth > kMaxFrames) return table.intern_stack(return_addresses, new_depth);
  // Frames shared with the last stack, from the outermost.
  const uint32_t common_limit = new_depth < depth ? new_depth : depth;
  uint32_t shared = 0;
  while (shared < common_limit && frames[shared] == return_addresses[new_depth - 1 - shared]) ++shared;
  uint32_t node = shared ? nodes[shared - 1] : StackTable::kRootId;
  for (uint32_t j = shared; j < new_depth; ++j) {
    const uint64_t address = return_addresses[new_depth - 1 - j];
    node = table.intern(node, address);
    if (node == StackTable::kRootId) {  // the table is full: forget, so nothing stale is kept
      depth = 0;
      return node;
    }
    frames[j] = address;
    nodes[j] = node;
  }
  depth = new_depth;
  return node;
}

}  // namespace memstage::preload
