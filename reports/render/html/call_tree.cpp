// The flame graph's call tree (call_tree.h): its growing indexes, kept apart from the page.
#include "reports/render/html/call_tree.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "reports/render/frame_label.h"

namespace memstage::reports {
namespace {

// uint64 -> uint32 by open addressing, at most half full (std::unordered_map spends most
// of its time in allocating and chasing nodes).
class U64Map {
 public:
  explicit U64Map(size_t min_slots) : slots_(min_slots) {}

  // The value of `key`, after inserting `value` for it when it had none; and whether it did.
  std::pair<uint32_t, bool> try_emplace(uint64_t key, uint32_t value) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.value == kEmpty) {
        slot = Slot{key, value};
        ++used_;
        return {value, true};
      }
      if (slot.key == key) return {slot.value, false};
    }
  }
  // Brings the slot where a look-up of `key` starts toward the cache.
  void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[hash(key) & (slots_.size() - 1)]); }
  // Room for `entries` in all, so that slots prefetched stay where they are.
  void reserve(size_t entries) {
    while (entries * 2 > slots_.size()) grow();
  }
  size_t size() const { return used_; }
  // Hands every entry to `take(key, value)` and empties the map, keeping its slots.
  template <typename Take>
  void drain(Take take) {
    for (Slot& slot : slots_) {
      if (slot.value == kEmpty) continue;
      take(slot.key, slot.value);
      slot = Slot{};
    }
    used_ = 0;
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint64_t key = 0;
    uint32_t value = kEmpty;
  };
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.value == kEmpty) continue;
      size_t i = hash(slot.key) & mask;
      while (slots_[i].value != kEmpty) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }

  std::vector<Slot> slots_;  // a power of two of them
  size_t used_ = 0;
};

// (node, label) -> child node: the call tree's children after each node's first; over a
// million for a large trace. Most look-ups are of nodes made a few stacks before (a stack
// branching from the one before it), whose children a table of the whole tree scatters,
// a cache miss each: those of the nodes made since the last move are kept in a table that
// stays in cache, and moved to the whole tree's table in a batch, its slots fetched ahead.
class ChildIndex {
 public:
  // The child of `node` labelled `label`, after making it `new_node` (the next node's
  // number) when it had none; and whether it did.
  std::pair<uint32_t, bool> try_emplace(uint32_t node, uint32_t label, uint32_t new_node) {
    if (recent_.size() >= kRecentEntries) {
      move_recent();
      recent_from_ = new_node;  // every node before it has its children in all_ now
    }
    U64Map& map = node >= recent_from_ ? recent_ : all_;
    return map.try_emplace(key(node, label), new_node);
  }

 private:
  static constexpr size_t kRecentEntries = 2048;  // in a table of twice as many slots (64 KiB)
  static constexpr size_t kMoveAhead = 16;        // slots of all_ fetched ahead of the move
  static uint64_t key(uint32_t node, uint32_t label) { return (static_cast<uint64_t>(node) << 32) | label; }

  void move_recent() {
    moving_.clear();
    recent_.drain([&](uint64_t key, uint32_t value) { moving_.emplace_back(key, value); });
    all_.reserve(all_.size() + moving_.size());
    for (size_t i = 0; i < moving_.size() && i < kMoveAhead; ++i) all_.prefetch(moving_[i].first);
    for (size_t i = 0; i < moving_.size(); ++i) {
      if (i + kMoveAhead < moving_.size()) all_.prefetch(moving_[i + kMoveAhead].first);
      all_.try_emplace(moving_[i].first, moving_[i].second);
    }
  }

  U64Map recent_{kRecentEntries * 2};  // children of nodes from recent_from_ on
  U64Map all_{1024};                   // children of the nodes before recent_from_
  uint32_t recent_from_ = 0;
  std::vector<std::pair<uint64_t, uint32_t>> moving_;
};

// Frames' labels as the call tree merges them (frame_label and module) numbered, without a
// string kept per label: an entry per label holds the text's hash and a frame of that
// label, whose text is made again to tell a hash's labels apart.
class LabelIds {
 public:
  explicit LabelIds(std::span<const Frame> frames)
      : frames_(frames), slots_(std::bit_ceil(std::max<size_t>(16, 2 * frames.size()))) {}

  uint32_t of(FrameIndex f) {
    text_of(f, text_);
    const uint64_t hash = std::hash<std::string_view>{}(text_);
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.id == kNone) {
        slot = Slot{hash, f, count_};
        return count_++;
      }
      if (slot.hash == hash) {
        text_of(slot.frame, other_text_);
        if (other_text_ == text_) return slot.id;
      }
    }
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Slot {
    uint64_t hash = 0;
    FrameIndex frame = 0;
    uint32_t id = kNone;
  };
  void text_of(FrameIndex f, std::string& text) const {
    const Frame& frame = frames_[f];
    text.assign(frame_label(frame));
    text += '\x1f';
    text += frame.module;
  }

  std::span<const Frame> frames_;
  std::vector<Slot> slots_;  // at most half full: there are at most as many labels as frames
  uint32_t count_ = 0;
  std::string text_, other_text_;  // kept for their room
};

// Grows a call tree by stacks, with the indexes that only its growing needs.
class CallTreeBuilder {
 public:
  CallTreeBuilder(const StackLists& lists, CallTree& tree)
      : lists_(lists),
        tree_(tree),
        label_of_frame_(lists.frames.size(), kNone),
        label_ids_(lists.frames),
        node_of_stack_node_(lists.nodes.size(), kNone) {
    node_of_stack_node_[0] = 0;
    // At most a node per stack node: sized once, where doubling copied each list's
    // million nodes over and over (the room not used is never touched).
    tree_.parent.reserve(lists.nodes.size());
    tree_.frame.reserve(lists.nodes.size());
    first_child_.reserve(lists.nodes.size());
  }

  // The node of a stack's innermost frame, adding the nodes it lacks. The report's stack
  // nodes that are already here (a stack's callers, mostly) have their node: a stack is
  // walked only up to the first of them.
  uint32_t leaf(const Stack& stack) {
    const std::span<const StackNode> stack_nodes = lists_.nodes;
    path_.clear();
    StackNodeIndex s = stack.innermost;
    while (node_of_stack_node_[s] == kNone) {
      path_.push_back(s);
      s = stack_nodes[s].caller;
    }
    uint32_t node = node_of_stack_node_[s];
    for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
      const FrameIndex f = stack_nodes[*it].frame;
      node = child(node, label_id(f), f);
      node_of_stack_node_[*it] = node;
    }
    return node;
  }

 private:
  // A node's first child is kept beside it and the others in the index: most nodes have
  // one, and the index's lookups are cache misses.
  uint32_t child(uint32_t node, uint32_t label, FrameIndex f) {
    FirstChild& first = first_child_[node];
    if (first.label == label) return first.node;
    const auto id = static_cast<uint32_t>(tree_.parent.size());
    if (first.label == kNone) {
      first = FirstChild{label, id};
    } else {
      const auto [found, added] = children_.try_emplace(node, label, id);
      if (!added) return found;
    }
    tree_.parent.push_back(node);
    tree_.frame.push_back(f);
    first_child_.push_back(FirstChild{});
    return id;
  }

  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t label_id(FrameIndex f) {
    uint32_t& id = label_of_frame_[f];
    if (id == kNone) {
      id = label_ids_.of(f);
    }
    return id;
  }

  const StackLists& lists_;
  CallTree& tree_;
  std::vector<uint32_t> label_of_frame_;  // by the report's frame index
  ChildIndex children_;  // (node, label id) -> child, for children after the first
  LabelIds label_ids_;
  std::vector<uint32_t> node_of_stack_node_;  // by the report's stack node: this tree's node
  std::vector<StackNodeIndex> path_;          // the stack nodes of a stack not yet here, innermost first
  struct FirstChild {
    uint32_t label = kNone, node = 0;
  };
  std::vector<FirstChild> first_child_{FirstChild{}};  // by node
};

}  // namespace

StacksCallTree make_call_tree(const StackLists& lists, const std::vector<uint8_t>* included) {
  StacksCallTree made;
  made.every_stack = included == nullptr;
  made.leaf_of_stack.assign(lists.stacks.size(), StacksCallTree::kNoLeaf);
  CallTreeBuilder builder(lists, made.tree);
  for (size_t s = 0; s < lists.stacks.size(); ++s) {
    if (!included || (*included)[s]) made.leaf_of_stack[s] = builder.leaf(lists.stacks[s]);
  }
  return made;
}

}  // namespace memstage::reports
