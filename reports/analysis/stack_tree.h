// The trace's stacks as the tracer stores them: a tree of (return address, parent) nodes,
// so that the frames thousands of stacks share are held once (deep stacks share most of
// theirs: docs/performance.md). A stack is named by its innermost node (version 2 traces) or by its number
// (version 1 traces, whose whole stacks are interned into the same tree).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "profiler/trace/block_vector.h"

namespace memstage::reports {

class StackTree {
 public:
  StackTree() { nodes_.push_back(Node{}); }  // node 0: the empty stack

  // Version 2: node `id` (the next one) and its caller stack. `snapshot`: the module
  // list current when it was defined, to resolve its address in.
  void add_node(uint32_t id, uint32_t parent, uint64_t return_address, int snapshot);
  // Version 1: whole stack `id` (the next one), innermost frame first.
  void add_stack(uint32_t id, std::span<const uint64_t> return_addresses, int snapshot);

  bool contains(uint32_t stack) const { return stack < stacks(); }
  // The stacks are numbered 0 to stacks() - 1.
  size_t stacks() const { return whole_stacks_ ? node_of_stack_.size() : nodes_.size(); }
  // The innermost node of `stack` (contained), and the module snapshot to resolve its
  // addresses in (-1: none was recorded before it).
  uint32_t node_of(uint32_t stack) const { return whole_stacks_ ? node_of_stack_[stack] : stack; }
  int snapshot_of(uint32_t stack) const;

  // Node 0 is the empty stack: no address.
  uint64_t return_address(uint32_t node) const { return nodes_[node].return_address(); }
  uint32_t parent(uint32_t node) const { return nodes_[node].parent; }
  size_t size() const { return nodes_.size(); }  // nodes, node 0 included

 private:
  // The address in two halves keeps a node 4-aligned, so no padding follows the parent:
  // the tree is the analysis's largest table, held until the end of pass two.
  struct Node {
    uint32_t parent = 0;
    uint32_t address_low = 0;
    uint32_t address_high = 0;
    static Node of(uint32_t parent, uint64_t return_address) {
      return Node{parent, static_cast<uint32_t>(return_address), static_cast<uint32_t>(return_address >> 32)};
    }
    uint64_t return_address() const { return (static_cast<uint64_t>(address_high) << 32) | address_low; }
  };
  trace::BlockVector<Node> nodes_;  // millions on a large trace
  // Version 2: the first node defined under each module snapshot (they only grow).
  std::vector<uint32_t> first_node_of_snapshot_;
  // Version 1 only: each whole stack's innermost node and snapshot, and the children of
  // each node by address, to intern the next stack.
  bool whole_stacks_ = false;
  std::vector<uint32_t> node_of_stack_;
  std::vector<int32_t> snapshot_of_stack_;
  absl::flat_hash_map<std::pair<uint32_t, uint64_t>, uint32_t> children_;  // (parent, address) -> node
};

}  // namespace memstage::reports
