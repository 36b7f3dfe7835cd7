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

StackTable::Index* StackTable::map_index(uint64_t slots) {
  auto* index = static_cast<Index*>(tracer_map_table(index_bytes(slots)));
  if (index) index->slot_count = slots;
  return index;
}

bool StackTable::init() {
  if (index_.load(std::memory_order_relaxed)) return true;
  Index* index = map_index(1u << 14);
  auto* first = static_cast<Node*>(tracer_map_huge(kBlockBytes, kHugePageBytes));
  if (!index || !first) return false;
  first[kRootId] = Node{0, 0, kRootId};
  blocks_[0].store(first, std::memory_order_release);
  index_.store(index, std::memory_order_release);
  count_.store(1, std::memory_order_release);
  return true;
}

uint64_t StackTable::home_slot(uint64_t h, uint64_t slot_count) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * slot_count) >> 64);
}

uint32_t StackTable::find(const Index* index, uint32_t parent, uint64_t return_address, uint64_t h) const {
  if (!index) return kRootId;
  const uint64_t slot_count = index->slot_count;
  for (uint64_t j = home_slot(h, slot_count);; j = j + 1 == slot_count ? 0 : j + 1) {
    const uint32_t slot = index->slots[j].load(std::memory_order_acquire);
    if (slot == 0) return kRootId;
    if (!slot_may_hold(slot, h)) continue;
    const uint32_t id = slot & kIdMask;
    const Node& n = node(id);
    if (n.return_address() == return_address && n.parent == parent) return id;
  }
}

void StackTable::insert_nodes(Index* index, uint32_t from, uint32_t to) const {
  const uint64_t slots = index->slot_count;
  // Each node goes to a random slot: fetched some nodes ahead, so the misses overlap.
  constexpr uint32_t kAhead = 16;
  for (uint32_t id = from; id < to && id < from + kAhead; ++id) {
    prefetch_line(&index->slots[home_slot(hash(parent(id), return_address(id)), slots)]);
  }
  for (uint32_t id = from; id < to; ++id) {
    if (id + kAhead < to) {
      prefetch_line(&index->slots[home_slot(hash(parent(id + kAhead), return_address(id + kAhead)), slots)]);
    }
    const uint64_t h = hash(parent(id), return_address(id));
    uint64_t j = home_slot(h, slots);
    while (index->slots[j].load(std::memory_order_relaxed)) j = j + 1 == slots ? 0 : j + 1;
    index->slots[j].store(slot_value(id, h), std::memory_order_relaxed);
  }
}

StackTable::Index* StackTable::take_ahead(uint64_t slots, uint32_t& from) {
  pthread_mutex_lock(&ahead_mutex_);  // after the helper's slice, if one runs
  Index* ahead = ahead_;
  if (ahead && ahead->slot_count != slots) {
    tracer_unmap_table(ahead, index_bytes(ahead->slot_count));
    ahead = nullptr;
  }
  if (ahead) from = ahead_covers_;
  ahead_ = nullptr;
  ahead_covers_ = 1;
  ahead_wanted_.store(false, std::memory_order_release);
  pthread_mutex_unlock(&ahead_mutex_);
  return ahead;
}

// The old index's pages moved to the start of `bigger` and their slots emptied, where
// `bigger` would fault in fresh pages (a fault each, on a VM often the host's too): its
// address stays mapped, empty, so a lookup still reading it finds no slot (nor a slot
// count) and asks again under the mutex. False where the kernel cannot (before Linux 5.7)
// or the old index is not in 2 MiB pages.
bool StackTable::move_pages(Index* old, Index* bigger) {
  const uint64_t old_slots = old->slot_count;
  const uint64_t bytes = tracer_table_mapped_bytes(index_bytes(old_slots));
  if (bytes < kHugePageBytes) return false;
  const uint64_t slots = bigger->slot_count;
  const long moved = syscall(SYS_mremap, old, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, bigger);
  if (moved != reinterpret_cast<long>(bigger)) return false;
  bigger->slot_count = slots;  // the moved first page brought the old count
  for (uint64_t j = 0; j < old_slots; ++j) bigger->slots[j].store(0, std::memory_order_relaxed);
  return true;
}

bool StackTable::grow_index_locked() {
  Index* old = index_.load(std::memory_order_relaxed);
  const uint64_t slots = grown_slot_count(old->slot_count);
  uint32_t from = 1;
  Index* bigger = take_ahead(slots, from);
  bool moved = false;
  if (!bigger) {
    bigger = map_index(slots);
    if (!bigger) return false;
    moved = move_pages(old, bigger);
  }
  insert_nodes(bigger, from, count_.load(std::memory_order_relaxed));
  index_.store(bigger, std::memory_order_release);
  if (!moved) {
    // A lookup may still be reading the old index: its slots go back to the kernel (reads
    // then see empty slots, a miss, and ask again under the mutex) but stay mapped. The
    // first page, with slot_count, stays as it is.
    constexpr uint64_t kPage = 4096;
    const uint64_t bytes = tracer_table_mapped_bytes(index_bytes(old->slot_count));
    if (bytes > 2 * kPage) syscall(SYS_madvise, reinterpret_cast<uint8_t*>(old) + kPage, bytes - kPage, MADV_DONTNEED);
  }
  tracer_settled(old);
  return true;
}

// Past 3/4 full: the index to add node `id` to, grown here or asked of the helper; nullptr
// when it is 7/8 full and cannot grow.
StackTable::Index* StackTable::index_for_add(uint32_t id) {
  Index* index = index_.load(std::memory_order_relaxed);
  const bool past_limit = (uint64_t{id} + 1) * 8 > index->slot_count * 7;
  if (!past_limit && index->slot_count >= kAheadMinSlots && helper_present_.load(std::memory_order_acquire)) {
    if (!ahead_wanted_.load(std::memory_order_relaxed)) ahead_wanted_.store(true, std::memory_order_release);
    return index;
  }
  if (grow_index_locked()) return index_.load(std::memory_order_relaxed);
  return past_limit ? nullptr : index;
}

bool StackTable::build_ahead() {
  if (!ahead_wanted_.load(std::memory_order_acquire)) return false;
  if (pthread_mutex_trylock(&ahead_mutex_) != 0) return false;  // a growth is taking it
  bool more = false, complete = false;
  if (ahead_wanted_.load(std::memory_order_relaxed)) {
    if (!ahead_) {
      ahead_ = map_index(grown_slot_count(index_.load(std::memory_order_acquire)->slot_count));
      ahead_covers_ = 1;
    }
    if (ahead_) {
      const uint32_t published = count_.load(std::memory_order_acquire);
      const uint32_t end = published - ahead_covers_ > kAheadSliceNodes ? ahead_covers_ + kAheadSliceNodes : published;
      insert_nodes(ahead_, ahead_covers_, end);
      ahead_covers_ = end;
      more = end < published;
      complete = !more;
    }
  }
  pthread_mutex_unlock(&ahead_mutex_);
  if (complete) {
    // It becomes the index now, not at the next add: a program that adds no more nodes
    // would otherwise keep both. The nodes added since are inserted under the lock.
    lock();
    if (ahead_wanted_.load(std::memory_order_relaxed)) grow_index_locked();
    unlock();
  }
  return more;
}

void StackTable::reset_lock_after_fork() {
  pthread_mutex_init(&mutex_, nullptr);
  pthread_mutex_init(&ahead_mutex_, nullptr);
  // The parent's helper may have been in the middle of a slice.
  if (ahead_) tracer_unmap_table(ahead_, index_bytes(ahead_->slot_count));
  ahead_ = nullptr;
  ahead_covers_ = 1;
  ahead_wanted_.store(false, std::memory_order_relaxed);
  helper_present_.store(false, std::memory_order_relaxed);
}

uint32_t StackTable::add_locked(uint32_t parent_id, uint64_t return_address, uint64_t h) {
  const uint32_t id = count_.load(std::memory_order_relaxed);
  if (id >= kMaxNodes) return kRootId;
  Index* index = index_.load(std::memory_order_relaxed);
  if ((uint64_t{id} + 1) * 4 > index->slot_count * 3 && !(index = index_for_add(id))) return kRootId;
  Node* b = blocks_[id / kBlockNodes].load(std::memory_order_relaxed);
  if (!b) {
    b = static_cast<Node*>(tracer_map_huge(kBlockBytes, 0));
    if (!b) return kRootId;
    blocks_[id / kBlockNodes].store(b, std::memory_order_release);
  }
  b[id % kBlockNodes] = Node{static_cast<uint32_t>(return_address), static_cast<uint32_t>(return_address >> 32), parent_id};
  // Published (for the writer) before it can be found (by the threads whose events the
  // writer then drains).
  count_.store(id + 1, std::memory_order_release);
  const uint64_t slot_count = index->slot_count;
  uint64_t j = home_slot(h, slot_count);
  while (index->slots[j].load(std::memory_order_relaxed)) j = j + 1 == slot_count ? 0 : j + 1;
  index->slots[j].store(slot_value(id, h), std::memory_order_release);
  return id;
}

// The frames below a node just added are added next, with the ids that follow its own:
// their index slots are known now, and fetched together instead of one miss after another.
void StackTable::prefetch_chain_slots(uint32_t added_id, const uint64_t* return_addresses, uint32_t below) const {
  const Index* index = index_.load(std::memory_order_relaxed);
  const uint64_t slot_count = index->slot_count;
  constexpr uint32_t kMaxPrefetched = 32;
  for (uint32_t k = 0; k < below && k < kMaxPrefetched; ++k) {
    const uint64_t h = hash(added_id + k, return_addresses[below - 1 - k]);
    prefetch_line(&index->slots[home_slot(h, slot_count)]);
  }
}

uint32_t StackTable::intern_chain(uint32_t parent_id, const uint64_t* return_addresses, uint32_t count, uint32_t* ids) {
  if (!index_.load(std::memory_order_acquire)) return kRootId;  // before init
  uint32_t node_id = parent_id;
  bool below_added = false;
  lock();
  for (uint32_t done = 0; done < count; ++done) {
    const uint64_t address = return_addresses[count - 1 - done];
    const uint64_t h = hash(node_id, address);
    uint32_t id = below_added ? kRootId : find(index_.load(std::memory_order_relaxed), node_id, address, h);
    if (id == kRootId) {
      id = add_locked(node_id, address, h);
      if (id == kRootId) {  // full
        node_id = kRootId;
        break;
      }
      if (!below_added) prefetch_chain_slots(id, return_addresses, count - 1 - done);
      below_added = true;
    }
    node_id = id;
    if (ids) ids[done] = id;
  }
  unlock();
  return node_id;
}

uint32_t StackTable::intern(uint32_t parent_id, uint64_t return_address) {
  if (const uint32_t id = find(parent_id, return_address, hash(parent_id, return_address))) return id;
  return intern_chain(parent_id, &return_address, 1, nullptr);
}

uint32_t StackTable::intern_stack(const uint64_t* return_addresses, uint32_t depth) {
  uint32_t node_id = kRootId;
  for (uint32_t i = depth; i > 0; --i) {
    const uint64_t address = return_addresses[i - 1];
    const uint32_t id = find(node_id, address, hash(node_id, address));
    if (id == kRootId) return intern_chain(node_id, return_addresses, i, nullptr);
    node_id = id;
  }
  return node_id;
}

LastStack::~LastStack() {
  if (cache) tracer_unmap(cache, kCachedNodes * sizeof(CachedNode));
}

uint32_t LastStack::intern(StackTable& table, const uint64_t* return_addresses, uint32_t new_depth) {
  if (new_depth > kMaxFrames) return table.intern_stack(return_addresses, new_depth);
  if (!cache) cache = static_cast<CachedNode*>(tracer_map(kCachedNodes * sizeof(CachedNode)));
  // Frames shared with the last stack, from the outermost.
  const uint32_t common_limit = new_depth < depth ? new_depth : depth;
  uint32_t j = 0;
  while (j < common_limit && frames[j] == return_addresses[new_depth - 1 - j]) ++j;
  uint32_t node = j ? nodes[j - 1] : StackTable::kRootId;
  // Then the nodes already known, from the cache or the table.
  for (; j < new_depth; ++j) {
    const uint64_t address = return_addresses[new_depth - 1 - j];
    const uint64_t h = StackTable::hash(node, address);
    CachedNode* entry = cache ? &cache[(h >> 20) & (kCachedNodes - 1)] : nullptr;
    uint32_t id;
    if (entry && entry->id != 0 && entry->return_address == address && entry->parent == node) {
      id = entry->id;
    } else {
      id = table.find(node, address, h);
      if (id == StackTable::kRootId) break;
      if (entry) *entry = CachedNode{address, node, id};
    }
    frames[j] = address;
    nodes[j] = node = id;
  }
  if (j < new_depth) {
    // The rest, from the first frame not found, under the table's lock at once.
    const uint32_t count = new_depth - j;
    node = table.intern_chain(node, return_addresses, count, nodes + j);
    if (node == StackTable::kRootId) {  // the table is full: forget, so nothing stale is kept
      depth = 0;
      return node;
    }
    for (uint32_t k = j; k < new_depth; ++k) {
      const uint64_t address = return_addresses[new_depth - 1 - k];
      frames[k] = address;
      if (cache) {
        const uint32_t parent = k ? nodes[k - 1] : StackTable::kRootId;
        cache[(StackTable::hash(parent, address) >> 20) & (kCachedNodes - 1)] = CachedNode{address, parent, nodes[k]};
      }
    }
  }
  depth = new_depth;
  return node;
}

}  // namespace memstage::preload
