// Interns call stacks in process as a tree: a node is (parent node, return address), the
// root (id 0) is the empty stack, and a stack is named by the node of its innermost frame.
// The frames that many stacks share (main, the interpreter's loop, a library's entry
// points) are stored once: `import torch` makes ~600,000 distinct stacks of ~80 frames
// that together hold a few hundred thousand nodes. The writer emits each node before the
// first event that uses it; symbolization happens offline.
//
// Lookups are lock-free (a published node never changes, an index slot is written once);
// adding a node takes a mutex. Memory grows with the nodes: node blocks and the index are
// mapped as they fill, nothing is reserved up front beyond a small table of block pointers.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace memstage::preload {

class StackTable {
 public:
  static constexpr uint32_t kRootId = 0;  // the empty stack, also used when full
  static constexpr uint32_t kBlockNodes = 1u << 16;
  static constexpr uint32_t kMaxBlocks = 256;
  static constexpr uint32_t kMaxNodes = kBlockNodes * kMaxBlocks;  // 16 Mi nodes

  bool init();
  // Thread-safe. The node (parent, return_address), added if new; kRootId when full.
  uint32_t intern(uint32_t parent, uint64_t return_address);
  // Thread-safe. The id of a whole stack, innermost frame first; kRootId for depth 0.
  uint32_t intern_stack(const uint64_t* return_addresses, uint32_t depth);

  // Ids below this are complete and readable without a lock.
  uint32_t published() const { return count_.load(std::memory_order_acquire); }
  uint32_t parent(uint32_t id) const { return block(id)->parents[id % kBlockNodes]; }
  uint64_t return_address(uint32_t id) const { return block(id)->addresses[id % kBlockNodes]; }

  void lock() { pthread_mutex_lock(&mutex_); }
  void unlock() { pthread_mutex_unlock(&mutex_); }
  void reset_lock_after_fork() { pthread_mutex_init(&mutex_, nullptr); }

 private:
  struct Block {
    uint64_t addresses[kBlockNodes];
    uint32_t parents[kBlockNodes];
  };
  // Open addressing over node ids (0: empty; the root is never in it). Replaced by one
  // 1.5 times the size when 3/4 full (4 to 6 bytes a node); a lookup still running in an old one may miss and
  // then asks again under the mutex. A slot holds the id in its low kIdBits and 8 bits of
  // the node's hash above them: a probe passes over most other nodes' slots without
  // reading their node (a cache miss each, in a table of millions of nodes).
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
  static uint64_t hash(uint32_t parent, uint64_t return_address);
  static uint64_t home_slot(uint64_t hash, uint64_t slot_count);

  Block* block(uint32_t id) const { return blocks_[id / kBlockNodes].load(std::memory_order_acquire); }
  uint32_t find(const Index* index, uint32_t parent, uint64_t return_address, uint64_t h) const;
  uint32_t add_locked(uint32_t parent, uint64_t return_address, uint64_t h);
  bool grow_index_locked();

  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  std::atomic<Block*> blocks_[kMaxBlocks] = {};
  std::atomic<uint32_t> count_{0};
  std::atomic<Index*> index_{nullptr};
};

// One thread's last stack, outermost frame first, with the node of each prefix: the next
// stack reuses the nodes of the frames it shares with it from the outermost end, compared
// frame by frame (never trusted on a hash). The common case, the same call path again or
// one that differs in its innermost frames, costs a comparison and no shared memory write.
struct LastStack {
  static constexpr uint32_t kMaxFrames = 512;
  uint32_t depth = 0;
  uint64_t frames[kMaxFrames];
  uint32_t nodes[kMaxFrames];

  // The id of the stack `return_addresses` (innermost first), interning what is new.
  uint32_t intern(StackTable& table, const uint64_t* return_addresses, uint32_t depth);
};

}  // namespace memstage::preload
