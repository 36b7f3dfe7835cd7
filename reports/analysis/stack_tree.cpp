#include "reports/analysis/stack_tree.h"

#include <algorithm>
#include <stdexcept>

namespace memstage::reports {

void StackTree::add_node(uint32_t id, uint32_t parent, uint64_t return_address, int snapshot) {
  // The reader has checked this already (ids in order, parents before children).
  if (id != nodes_.size() || parent >= id || whole_stacks_) {
    throw std::runtime_error("corrupt trace: stack tree node out of order");
  }
  nodes_.push_back(Node::of(parent, return_address));
  while (snapshot >= static_cast<int>(first_node_of_snapshot_.size())) first_node_of_snapshot_.push_back(id);
}

void StackTree::add_stack(uint32_t id, std::span<const uint64_t> return_addresses, int snapshot) {
  if (id != node_of_stack_.size() || (nodes_.size() > 1 && !whole_stacks_)) {
    throw std::runtime_error("corrupt trace: whole stack out of order");
  }
  whole_stacks_ = true;
  uint32_t node = 0;
  for (size_t i = return_addresses.size(); i > 0; --i) {
    auto [it, added] = children_.try_emplace(std::pair{node, return_addresses[i - 1]},
                                             static_cast<uint32_t>(nodes_.size()));
    if (added) nodes_.push_back(Node::of(node, return_addresses[i - 1]));
    node = it->second;
  }
  node_of_stack_.push_back(node);
  snapshot_of_stack_.push_back(snapshot);
}

int StackTree::snapshot_of(uint32_t stack) const {
  if (whole_stacks_) return snapshot_of_stack_[stack];
  const auto later = std::upper_bound(first_node_of_snapshot_.begin(), first_node_of_snapshot_.end(), stack);
  return static_cast<int>(later - first_node_of_snapshot_.begin()) - 1;
}

}  // namespace memstage::reports
