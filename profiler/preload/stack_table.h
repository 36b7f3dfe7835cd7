// Interns call stacks in process as a tree: a node is (parent node, return address), the
// root (id 0) is the empty stack, and a stack is named by the node of its innermost frame.
// The frames that many stacks share (main, the interpreter's loop, a library's entry
// points) are stored once: `import torch` makes ~600,000 distinct stacks of ~80 frames
// that together hold a few hundred thousand nodes. The writer emits each node before the
// first event that uses it; symbolization happens offline.
//
// Lookups are lock-free (a published node never changes, an index slot is written once);
// adding nodes takes a mutex. Memory grows with the nodes: node blocks and the index are
// mapped as they fill, nothing is reserved up front beyond a small table of block pointers;
// the large ones in 2 MiB pages (tracer_map_huge).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace memstage::preload {

class StackTable {
 public:
  static constexpr uint32_t kRootId = 0;  // the empty stack, also used when full
  // A block is three 2 MiB pages of nodes (tracer_map_huge); the first block's first 2 MiB
  // are in 4 KiB pages, so a small program's table stays small.
  static constexpr uint32_t kBlockNodes = 1u << 19;
  static constexpr uint32_t kMaxBlocks = 32;
  static constexpr uint32_t kMaxNodes = kBlockNodes * kMaxBlocks;  // 16 Mi nodes

  bool init();
  static uint64_t hash(uint32_t parent, uint64_t return_address);
  // Lock-free: the node (parent, return_address) with that `hash`, or kRootId when it is
  // not there yet (or is being added: intern_chain then finds it).
  uint32_t find(uint32_t parent, uint64_t return_address, uint64_t hash) const {
    return find(index_.load(std::memory_order_acquire), parent, return_address, hash);
  }
  // Thread-safe. The node (parent, return_address), added if new; kRootId when full.
  uint32_t intern(uint32_t parent, uint64_t return_address);
  // Thread-safe, under one lock: the chain of `count` frames below `parent`, outermost
  // return_addresses[count - 1] to innermost return_addresses[0], each added if new. Once
  // one is added the frames below it are new too (nothing else adds while the lock is
  // held) and are added without a lookup. Writes each frame's node into ids[] (when given),
  // outermost first; returns the innermost's, or kRootId when the table filled (ids[] then
  // holds the ones interned before).
  uint32_t intern_chain(uint32_t parent, const uint64_t* return_addresses, uint32_t count, uint32_t* ids);
  // Thread-safe. The id of a whole stack, innermost frame first; kRootId for depth 0.
  uint32_t intern_stack(const uint64_t* return_addresses, uint32_t depth);

  // Ids below this are complete and readable without a lock.
  uint32_t published() const { return count_.load(std::memory_order_acquire); }
  uint32_t parent(uint32_t id) const { return node(id).parent; }
  uint64_t return_address(uint32_t id) const { return node(id).return_address(); }

  void lock() { pthread_mutex_lock(&mutex_); }
  void unlock() { pthread_mutex_unlock(&mutex_); }
  // In a forked child: the locks as new, and no helper (what one was building is dropped).
  void reset_lock_after_fork();

  // The index's growth with a helper thread (the trace's compressor): from 3/4 full, the
  // next index is built beside the current one, outside the lock, out of the published
  // nodes, while adds go on into the current one up to 7/8. A growth re-inserts every node
  // (millions, a cache miss and a fresh page's share each): made under the lock it stalled
  // the thread that added the node, the traced program's. Without a helper, or for a small
  // index, or at 7/8, the growth is made under the lock, from what a helper built so far.
  void set_growth_helper(bool present) { helper_present_.store(present, std::memory_order_release); }
  // True while a growth waits for the helper's build_ahead().
  bool growth_wanted() const { return ahead_wanted_.load(std::memory_order_acquire); }
  // The helper's: inserts a slice of the published nodes into the next index; once it has
  // them all, makes it the index (under the lock). True when more remains.
  bool build_ahead();

 private:
  // 12 bytes, the key whole: a lookup's comparison reads one cache line.
  struct Node {
    uint32_t address_low;
    uint32_t address_high;
    uint32_t parent;
    uint64_t return_address() const { return static_cast<uint64_t>(address_high) << 32 | address_low; }
  };
  static_assert(sizeof(Node) == 12);
  static constexpr uint64_t kBlockBytes = sizeof(Node) * uint64_t{kBlockNodes};
  // Open addressing over node ids (0: empty; the root is never in it). Replaced by one
  // twice the size when 3/4 full (5 to 11 bytes a node): each growth re-inserts every node,
  // on the traced thread when it has no helper, and growing by half cost it more time than
  // the emptier slots cost memory (docs/performance.md). A lookup still running in an old
  // one may miss and then asks again under the mutex. A slot holds the id in its low
  // kIdBits and 8 bits of the node's hash above them: a probe passes over most other
  // nodes' slots without reading their node (a cache miss each, in a table of millions).
  static constexpr uint32_t kIdBits = 24;
  static constexpr uint32_t kIdMask = (1u << kIdBits) - 1;
  static_assert(kMaxNodes - 1 <= kIdMask);
  static uint32_t slot_value(uint32_t id, uint64_t h) { return id | static_cast<uint32_t>(h & 0xff) << kIdBits; }
  static bool slot_may_hold(uint32_t slot, uint64_t h) { return slot >> kIdBits == static_cast<uint32_t>(h & 0xff); }
  struct Index {
    uint64_t slot_count;
    std::atomic<uint32_t> slots[1];  // slot_count of them
  };
  static uint64_t index_bytes(uint64_t slots) { return sizeof(Index) + (slots - 1) * sizeof(uint32_t); }
  static Index* map_index(uint64_t slots);
  static uint64_t home_slot(uint64_t hash, uint64_t slot_count);

  static uint64_t grown_slot_count(uint64_t slots) { return slots * 2; }
  // The growth with a helper: for an index this large and up.
  static constexpr uint64_t kAheadMinSlots = 1u << 18;
  static constexpr uint32_t kAheadSliceNodes = 1u << 16;  // a slice: a few ms of the helper's

  const Node& node(uint32_t id) const {
    return blocks_[id / kBlockNodes].load(std::memory_order_acquire)[id % kBlockNodes];
  }
  uint32_t find(const Index* index, uint32_t parent, uint64_t return_address, uint64_t h) const;
  uint32_t add_locked(uint32_t parent, uint64_t return_address, uint64_t h);
  void prefetch_chain_slots(uint32_t added_id, const uint64_t* return_addresses, uint32_t below) const;
  // Nodes [from, to) into `index`, which holds none of them yet.
  void insert_nodes(Index* index, uint32_t from, uint32_t to) const;
  Index* index_for_add(uint32_t id);
  bool grow_index_locked();
  bool move_pages(Index* old, Index* bigger);
  // The helper's next index, and the first node not in it; nullptr if none of that size.
  Index* take_ahead(uint64_t slots, uint32_t& from);

  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  std::atomic<Node*> blocks_[kMaxBlocks] = {};
  std::atomic<uint32_t> count_{0};
  std::atomic<Index*> index_{nullptr};
  // The next index, built by the helper. Lock order: mutex_, then ahead_mutex_ (which the
  // helper holds for a slice).
  std::atomic<bool> helper_present_{false};
  std::atomic<bool> ahead_wanted_{false};
  pthread_mutex_t ahead_mutex_ = PTHREAD_MUTEX_INITIALIZER;
  Index* ahead_ = nullptr;     // under ahead_mutex_
  uint32_t ahead_covers_ = 1;  // nodes [1, ahead_covers_) are in ahead_
};

// One thread's last stack, outermost frame first, with the node of each prefix: the next
// stack reuses the nodes of the frames it shares with it from the outermost end, compared
// frame by frame (never trusted on a hash). The common case, the same call path again or
// one that differs in its innermost frames, costs a comparison and no shared memory write.
// The frames past the shared ones are looked up in the thread's node cache, then in the
// table; the first one not there and the rest are added under one lock.
struct LastStack {
  static constexpr uint32_t kMaxFrames = 512;
  uint32_t depth = 0;
  uint64_t frames[kMaxFrames];
  uint32_t nodes[kMaxFrames];
  // Nodes this thread met lately, direct-mapped on the node's hash and compared whole
  // (parent and return address): the paths a program comes back to after others in
  // between (an interpreter's, a library's) are found without the table's index, whose
  // slot and node are a cache miss each in a table of millions. Mapped on first use
  // (zeroed: an id of 0 is an empty entry); never stale, as a node's id never changes.
  struct CachedNode {
    uint64_t return_address;
    uint32_t parent;
    uint32_t id;
  };
  static constexpr uint32_t kCachedNodes = 1u << 12;  // 64 KiB
  CachedNode* cache = nullptr;

  LastStack() = default;
  LastStack(const LastStack&) = delete;
  LastStack& operator=(const LastStack&) = delete;
  ~LastStack();

  // The id of the stack `return_addresses` (innermost first), interning what is new.
  uint32_t intern(StackTable& table, const uint64_t* return_addresses, uint32_t depth);
};

}  // namespace memstage::preload
