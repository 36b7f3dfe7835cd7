#include "reports/analysis/stack_resolver.h"

#include <algorithm>

#include "reports/analysis/allocator_frames.h"

namespace memstage::reports {

StackResolver::StackResolver(const StackTree& tree, const std::vector<std::vector<trace::Module>>& module_snapshots,
                             const std::unordered_map<uint64_t, trace::PythonCode>& python_codes, Report& report,
                             bool symbolize)
    : tree_(tree),
      python_codes_(python_codes),
      report_(report),
      symbolize_(symbolize),
      modules_(module_snapshots),
      interner_(report.frames) {}

StackIndex StackResolver::index_of(uint32_t trace_stack) {
  auto [it, inserted] = indices_.try_emplace(trace_stack, 0);
  if (!inserted) return it->second;
  it->second = static_cast<StackIndex>(report_.stacks.size());
  report_.stacks.push_back(resolve(trace_stack));
  return it->second;
}

void StackResolver::add_frames(uint64_t address, uint32_t module) {
  if (module == ModuleIndex::kNone) {
    Frame f;
    f.address = address;
    f.module_offset = address;
    frame_ids_.push_back(interner_.intern(std::move(f)));
    return;
  }
  const trace::Module& m = modules_.module(module);
  if (!symbolize_) {
    Frame f;
    f.module = m.path;
    f.address = address;
    f.module_offset = address - m.load_bias;
    frame_ids_.push_back(interner_.intern(std::move(f)));
    return;
  }
  for (Frame& f : symbolizer_.symbolize(m.path, m.load_bias, address, true)) {
    f.allocator = is_allocation_plumbing(f.function, f.module);
    frame_ids_.push_back(interner_.intern(std::move(f)));
  }
}

void StackResolver::append_native(std::vector<FrameIndex>& out, uint64_t address, int snapshot) {
  const uint32_t module = modules_.module_for(address, snapshot);
  auto [it, first_time] = frames_of_.try_emplace(std::pair{address, module});
  auto& [first, count] = it->second;
  if (first_time) {
    first = static_cast<uint32_t>(frame_ids_.size());
    add_frames(address, module);
    count = static_cast<uint32_t>(frame_ids_.size()) - first;
  }
  out.insert(out.end(), frame_ids_.begin() + first, frame_ids_.begin() + first + count);
}

// Each trace stack is resolved once. Stacks resolved one after the other mostly share
// their outer frames (a node of the tree and all its callers): with the same module
// list, those resolve to the same frames as last time, and only the stack's own inner
// nodes are looked at.
Stack StackResolver::resolve(uint32_t trace_stack) {
  if (!tree_.contains(trace_stack)) return {};
  const int snapshot = std::max(tree_.snapshot_of(trace_stack), 0);
  const uint32_t innermost = tree_.node_of(trace_stack);
  const bool same_modules = snapshot == previous_snapshot_;
  // The stack's own nodes, innermost first, up to the first one the last stack has too.
  own_nodes_.clear();
  uint32_t n = innermost;
  while (n != 0) {
    const uint32_t d = tree_.depth(n);
    if (same_modules && d < previous_nodes_.size() && previous_nodes_[d] == n) break;
    own_nodes_.push_back(n);
    n = tree_.parent(n);
  }
  const size_t shared = tree_.depth(n);  // frames 1..shared from the outermost: the last stack's
  const size_t previous_depth = previous_nodes_.empty() ? 0 : previous_nodes_.size() - 1;
  const size_t own = own_nodes_.size();
  // address_starts_ is by index from the innermost address of the last stack.
  const size_t reused_from = shared ? address_starts_[previous_depth - shared] : scratch_.size();
  std::vector<FrameIndex> frames;
  std::vector<uint32_t> starts;
  frames.reserve(own + own / 4 + (scratch_.size() - reused_from));
  starts.reserve(own + shared);
  for (const uint32_t node : own_nodes_) {
    const uint64_t address = tree_.return_address(node);
    starts.push_back(static_cast<uint32_t>(frames.size()));
    if (trace::is_python_frame(address)) {
      auto [it, added] = python_ids_.try_emplace(address, 0);
      if (added) it->second = interner_.intern(python_frame(address));
      frames.push_back(it->second);
      continue;
    }
    append_native(frames, address, snapshot);
  }
  const auto offset = static_cast<int64_t>(frames.size()) - static_cast<int64_t>(reused_from);
  for (size_t i = previous_depth - shared; i < previous_depth; ++i) {
    starts.push_back(static_cast<uint32_t>(address_starts_[i] + offset));
  }
  frames.insert(frames.end(), scratch_.begin() + static_cast<ptrdiff_t>(reused_from), scratch_.end());
  scratch_ = std::move(frames);
  address_starts_ = std::move(starts);
  // previous_nodes_[d]: the node at depth d of this stack (index 0: the root).
  previous_nodes_.resize(shared + own + 1);
  previous_nodes_[0] = 0;
  for (size_t i = 0; i < own; ++i) previous_nodes_[shared + own - i] = own_nodes_[i];
  previous_snapshot_ = snapshot;
  return Stack{scratch_};
}

Frame StackResolver::python_frame(uint64_t address) const {
  Frame f;
  f.kind = "python";
  f.line = static_cast<int>(trace::python_frame_line(address));
  const auto code = python_codes_.find(trace::python_frame_code_id(address));
  if (code != python_codes_.end()) {
    f.function = code->second.function;
    f.file = code->second.file;
  }
  return f;
}

}  // namespace memstage::reports
