// Adds stacks given as lists of frames to Report::stack_nodes, sharing nodes: a (caller,
// frame) pair already there is that node, so stacks with the same outer frames share
// them. For stacks made whole (test fixtures, tests); the analysis makes its nodes from the
// trace's own tree instead, whose nodes are already distinct (stack_resolver.h).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

class StackInterner {
 public:
  // Indexes what `nodes` holds already (node 0, the empty stack, at least) and adds to it.
  explicit StackInterner(std::vector<StackNode>& nodes) : nodes_(nodes) {
    if (nodes_.empty()) nodes_.push_back(StackNode{});
    for (StackNodeIndex i = 1; i < nodes_.size(); ++i) ids_.try_emplace(key(nodes_[i].caller, nodes_[i].frame), i);
  }
  StackInterner(const StackInterner&) = delete;
  StackInterner& operator=(const StackInterner&) = delete;

  // The node of `frame` called from the stack whose innermost node is `caller`.
  StackNodeIndex node(StackNodeIndex caller, FrameIndex frame) {
    const auto [it, added] = ids_.try_emplace(key(caller, frame), static_cast<StackNodeIndex>(nodes_.size()));
    if (added) nodes_.push_back(StackNode{frame, caller});
    return it->second;
  }
  // The stack of `frames`, innermost first.
  Stack stack(std::span<const FrameIndex> frames) {
    StackNodeIndex n = 0;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) n = node(n, *it);
    return Stack{n};
  }

 private:
  static uint64_t key(StackNodeIndex caller, FrameIndex frame) { return (uint64_t{caller} << 32) | frame; }
  std::vector<StackNode>& nodes_;
  std::unordered_map<uint64_t, StackNodeIndex> ids_;
};

}  // namespace memstage::reports
