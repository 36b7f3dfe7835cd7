#include "reports/analysis/stack_resolver.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "reports/analysis/allocator_frames.h"

namespace memstage::reports {

StackResolver::StackResolver(const StackTree& tree, const std::vector<std::vector<trace::Module>>& module_snapshots,
                             const std::unordered_map<uint64_t, trace::PythonCode>& python_codes, Report& report,
                             bool symbolize, Symbolizer symbolizer)
    : tree_(tree),
      module_snapshots_(module_snapshots),
      python_codes_(python_codes),
      report_(&report),
      symbolize_(symbolize),
      symbolizer_(std::move(symbolizer)),
      modules_(module_snapshots),
      interner_(report.frames) {}

void StackResolver::resolve_while_read() {
  tree_read_ = false;
  by_trace_node_ = true;
  placed_ = true;  // place_tree: a growing tree has no places
}

void StackResolver::index_modules() {
  if (modules_.lists() != module_snapshots_.size()) modules_ = ModuleIndex(module_snapshots_);
}

void StackResolver::resolve_read() {
  // Those left are tried again once another module list is read. Not for Python codes: the
  // tracer writes a code before any stack that names it, so one missing now is lost (a
  // damaged chunk) and pass two resolves it as it is, while frames outside every module
  // (code a program generates) would be tried at each chunk, a code read in most.
  if (modules_.lists() != module_snapshots_.size()) {
    index_modules();
    std::vector<uint32_t> left;
    left.swap(left_for_later_);
    for (const uint32_t stack : left) leave_unless_resolved(stack);
  }
  for (; next_read_stack_ < tree_.stacks(); ++next_read_stack_) leave_unless_resolved(next_read_stack_);
}

void StackResolver::leave_unless_resolved(uint32_t stack) {
  // Past the bound they are left to pass two, which resolves every stack it names.
  if (!walk(stack) && left_for_later_.size() < kMostLeftForLater) left_for_later_.push_back(stack);
}

void StackResolver::move_to_report(Report& report) {
  if (!report.frames.empty() || report.stack_nodes.size() != 1 || !report.stacks.empty()) {
    throw std::logic_error("a resolver's frames moved into a report that has frames of its own");
  }
  report.frames.swap(report_->frames);
  report.stack_nodes.swap(report_->stack_nodes);
  interner_.move_to(report.frames);
  report_ = &report;
  tree_read_ = true;
  index_modules();
  std::vector<uint32_t>().swap(left_for_later_);  // pass two names them: resolved then
}

StackIndex StackResolver::index_of(uint32_t trace_stack) {
  if (const uint32_t rank = ascending_.number_of(trace_stack); rank != AscendingNumbers::kNone) {
    return ascending_base_ + rank;
  }
  if (const auto other = index_of_other_stack_.find(trace_stack); other != index_of_other_stack_.end()) {
    return other->second;
  }
  const bool known = contains(trace_stack);
  if (known && tree_forgotten_) throw std::logic_error("a stack named after the stack tree was let go");
  const auto index = static_cast<StackIndex>(report_->stacks.size());
  report_->stacks.push_back(Stack{resolve(trace_stack)});
  if (!known || !numbers_next(trace_stack, index)) index_of_other_stack_.emplace(trace_stack, index);
  return index;
}

// The first stack named starts the ranks; each after it joins them while it comes above the
// last and its report stack follows theirs (another resolver may add to the report between).
bool StackResolver::numbers_next(uint32_t trace_stack, StackIndex index) {
  if (ascending_.size() == 0) {
    ascending_ = AscendingNumbers(tree_stacks());
    ascending_base_ = index;
  }
  return index == ascending_base_ + ascending_.size() && ascending_.add(trace_stack);
}

void StackResolver::add_frames(uint64_t address, uint32_t module) {
  if (module == kPython) {
    frame_ids_.push_back(interner_.intern(python_frame(address)));
    return;
  }
  if (module == ModuleIndex::kNone) {
    Frame f;
    f.address = address;
    f.module_offset = address;
    if (address == trace::kLostFrameAddress) f.function = trace::kLostInDamagedChunk;  // the reader's stand-in
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

bool StackResolver::can_know_yet(uint64_t address, uint32_t module) const {
  if (module == kPython) return python_codes_.contains(trace::python_frame_code_id(address));
  return module != ModuleIndex::kNone;
}

std::optional<std::pair<uint32_t, uint32_t>> StackResolver::frames_at(uint64_t address, int snapshot) {
  const bool python = trace::is_python_frame(address);
  auto [it, first_time] = frames_of_.try_emplace(address);
  FramesAt& at = it->second;
  if (!first_time && (python || at.snapshot == snapshot)) return std::pair{at.first, at.count};
  const uint32_t module = python ? kPython : modules_.module_for(address, snapshot);
  if (!tree_read_ && !can_know_yet(address, module)) {
    if (first_time) frames_of_.erase(it);
    return std::nullopt;
  }
  if (first_time || module != at.module) {
    // The frames found before, in the other module, stay where the next list may ask.
    if (!first_time) frames_in_other_module_.try_emplace(std::pair{address, at.module}, std::pair{at.first, at.count});
    const auto found = frames_in_other_module_.find(std::pair{address, module});
    if (found != frames_in_other_module_.end()) {
      std::tie(at.first, at.count) = found->second;
    } else {
      at.first = static_cast<uint32_t>(frame_ids_.size());
      add_frames(address, module);
      at.count = static_cast<uint32_t>(frame_ids_.size()) - at.first;
    }
    at.module = module;
  }
  at.snapshot = snapshot;
  return std::pair{at.first, at.count};
}

bool StackResolver::is_node_of(StackNodeIndex node, StackNodeIndex caller, uint32_t first, uint32_t count) const {
  const std::vector<StackNode>& nodes = report_->stack_nodes;
  for (uint32_t i = 0; i < count; ++i, node = nodes[node].caller) {
    if (node == 0 || nodes[node].frame != frame_ids_[first + i]) return false;
  }
  return node == caller;
}

void StackResolver::place_tree() {
  if (placed_ || tree_forgotten_) return;
  placed_ = true;
  std::vector<StackNode>& nodes = report_->stack_nodes;
  // Room past the places for the outer frames of inlined calls, never touched if unused.
  nodes.reserve(nodes.size() + tree_.size() + tree_.size() / 8);
  slots_base_ = static_cast<StackNodeIndex>(nodes.size() - 1);
  slots_ = tree_.size();
  nodes.resize(nodes.size() + tree_.size() - 1);
  // Room for the frames too, touched only as used: a list of 160-byte frames that doubles
  // holds both copies a while, the resolution's highest point. Stacks share most frames,
  // so a large tree names far fewer frames than nodes; past the room, the list doubles.
  // A sixteenth of the nodes: 10 bytes of address space a node, about the nodes' own.
  report_->frames.reserve(report_->frames.size() + tree_.size() / 16);
}

StackNodeIndex StackResolver::node_of(uint32_t trace_node) const {
  if (trace_node == 0) return 0;
  if (by_trace_node_) return node_of_trace_node_[trace_node];
  if (!moved_.empty()) {
    if (const auto moved = moved_.find(trace_node); moved != moved_.end()) return moved->second;
  }
  return slots_base_ + trace_node;
}

StackNodeIndex StackResolver::add_nodes(uint32_t trace_node, bool first_time, StackNodeIndex caller, uint32_t first,
                                        uint32_t count) {
  std::vector<StackNode>& nodes = report_->stack_nodes;
  // An address's frames are innermost first (the inlined ones before their caller).
  for (uint32_t i = count; i > 1; --i) {
    nodes.push_back(StackNode{frame_ids_[first + i - 1], caller});
    caller = static_cast<StackNodeIndex>(nodes.size() - 1);
  }
  if (by_trace_node_) {
    if (count > 0) {
      nodes.push_back(StackNode{frame_ids_[first], caller});
      caller = static_cast<StackNodeIndex>(nodes.size() - 1);
    }
    return node_of_trace_node_[trace_node] = caller;
  }
  if (count == 0) {
    moved_[trace_node] = caller;
    return caller;
  }
  const StackNode innermost{frame_ids_[first], caller};
  if (first_time && trace_node < slots_) {
    nodes[slots_base_ + trace_node] = innermost;
    return slots_base_ + trace_node;
  }
  nodes.push_back(innermost);
  const auto node = static_cast<StackNodeIndex>(nodes.size() - 1);
  moved_[trace_node] = node;
  return node;
}

// Each trace stack is resolved once, and each trace node once per module list: stacks
// mostly share their outer frames (a node of the tree and all its callers), and walking a
// stack stops at the first node made already.
StackNodeIndex StackResolver::resolve(uint32_t trace_stack) {
  if (!tree_.contains(trace_stack)) return 0;
  return *walk(trace_stack);  // the tree is read whole: every frame is known
}

std::optional<StackNodeIndex> StackResolver::walk(uint32_t trace_stack) {
  const int snapshot = std::max(tree_.snapshot_of(trace_stack), 0);
  const MadeIn mark = made_in_mark(snapshot);
  if (made_in_.size() < tree_.size()) made_in_.resize(tree_.size(), kUnresolved);
  if (by_trace_node_ && node_of_trace_node_.size() < tree_.size()) node_of_trace_node_.resize(tree_.size());
  path_.clear();
  uint32_t n = tree_.node_of(trace_stack);
  while (n != 0 && (made_in_[n] != mark || mark == kMadeInAnother)) {
    path_.push_back(n);
    n = tree_.parent(n);
  }
  StackNodeIndex node = node_of(n);
  for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
    const auto frames = frames_at(tree_.return_address(*it), snapshot);
    if (!frames) return std::nullopt;
    const auto [first, count] = *frames;
    MadeIn& made_in = made_in_[*it];
    // Made under another module list: the same nodes unless the address's module differs.
    if (made_in != kUnresolved && is_node_of(node_of(*it), node, first, count)) {
      node = node_of(*it);
    } else {
      node = add_nodes(*it, made_in == kUnresolved, node, first, count);
    }
    made_in = mark;
  }
  return node;
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
