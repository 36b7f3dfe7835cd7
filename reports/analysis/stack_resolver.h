// The trace's stacks (stack_tree.h) as the report's: a tree of symbolized frames
// (Report::stack_nodes), each distinct frame stored once in Report::frames. A large trace
// (Python importing torch: 7e5 stacks, 4.6e7 addresses in all) has under 1e5 distinct
// frames: each address is symbolized once and later occurrences reuse its frames' indices.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/ascending_numbers.h"
#include "reports/analysis/module_index.h"
#include "reports/analysis/stack_tree.h"
#include "reports/model/frame_interner.h"
#include "reports/model/report_model.h"
#include "reports/symbolize/symbolizer.h"

namespace memstage::reports {

class StackResolver {
 public:
  // The trace's stacks, the module lists their addresses are resolved in and the Python
  // code objects their Python frames name, all kept by reference; stacks and frames go
  // into `report`. Without `symbolize`, native frames are module + offset. `symbolizer`:
  // one that has modules open already (warmed while the program ran), or a new one.
  StackResolver(const StackTree& tree, const std::vector<std::vector<trace::Module>>& module_snapshots,
                const std::unordered_map<uint64_t, trace::PythonCode>& python_codes, Report& report, bool symbolize,
                Symbolizer symbolizer = Symbolizer());

  // Resolution begun while the trace is read (memstage run: on its reader's thread, as the
  // program runs), its frames and nodes in the report it was made with until
  // move_to_report. Stacks are resolved as the tree gains them (resolve_read); a stack with
  // a frame that a module list or a Python code not read yet may decide waits: it is tried
  // again when another module list is read, and otherwise resolved by pass two.
  void resolve_while_read();
  // The stacks the tree gained since the last call, each as far as its frames can be known
  // yet: the stacks after pass two names find their nodes made.
  void resolve_read();
  // Goes on in `report`, made since, with the frames and nodes resolved so far (`report`
  // has none of its own yet): the tree is read whole, every frame can be known.
  void move_to_report(Report& report);
  bool symbolizes() const { return symbolize_; }
  // The stacks resolve_read resolved whole (for tests).
  size_t stacks_resolved_while_read() const { return next_read_stack_ - left_for_later_.size(); }

  // The report's stack for trace stack `trace_stack`, resolved on first use.
  StackIndex index_of(uint32_t trace_stack);
  // `stacks` more are about to be resolved: the report's list is sized once.
  void reserve(size_t stacks) { report_->stacks.reserve(report_->stacks.size() + stacks); }
  // Most of the tree is about to be resolved: each trace node is given its report node's
  // place now (see slots_), the report's nodes sized once (a doubling list of the tree's
  // nodes held both copies at once). Once only.
  void place_tree();

  // Lets go of the module list each trace node was made in once most stacks are resolved.
  // A stack resolved after walks its whole path again, its nodes made anew: the same
  // frames, so the same stack to every reader.
  void forget_walks() {
    std::vector<MadeIn>().swap(made_in_);
    decltype(moved_)().swap(moved_);
    slots_ = 0;  // the places are taken: nodes made anew are added after them
    std::vector<StackNodeIndex>().swap(node_of_trace_node_);
    by_trace_node_ = false;
  }
  // The caller is about to let go of the tree: every stack named from here on was resolved
  // before. Naming another is a logic error, not a damaged trace (those are unknown stacks).
  void forget_tree() {
    forget_walks();
    tree_stacks_ = tree_.stacks();
    tree_forgotten_ = true;
    forget_symbolization();
  }

  // No frame is symbolized after the tree is let go: the tables that found each address's
  // frames, and the symbolizer with its modules open, go before the steps after pass two.
  void forget_symbolization() {
    decltype(frames_of_)().swap(frames_of_);
    decltype(frames_in_other_module_)().swap(frames_in_other_module_);
    std::vector<FrameIndex>().swap(frame_ids_);
    modules_.forget_addresses();
    interner_.forget();
    Symbolizer done = std::move(symbolizer_);
  }

  // The symbolizer, its modules open, for another resolver (the run so far, a second later).
  Symbolizer take_symbolizer() { return std::move(symbolizer_); }

 private:
  // The report's node of trace stack `trace_stack`'s innermost frame, made on first use.
  StackNodeIndex resolve(uint32_t trace_stack);
  // resolve's walk; nullopt (while the tree is read) at a frame that cannot be known yet,
  // the stack's nodes outside it made.
  std::optional<StackNodeIndex> walk(uint32_t trace_stack);
  // The frames of a return address in the module list `snapshot`, innermost first:
  // (first, count) in frame_ids_, symbolized once per address and module. nullopt while
  // the tree is read where they cannot be known yet (can_know_yet).
  std::optional<std::pair<uint32_t, uint32_t>> frames_at(uint64_t address, int snapshot);
  // While the tree is read: a Python frame's code is read, a native address has a module
  // (a later module list could place an address no list places yet, never move one).
  bool can_know_yet(uint64_t address, uint32_t module) const;
  // The module index again, once more module lists were read (its modules keep their ids).
  void index_modules();
  // Resolves `stack` while the tree is read, or keeps it to try again (resolve_read).
  void leave_unless_resolved(uint32_t stack);
  // Appends to frame_ids_ the frames of an address inside `module` (ModuleIndex::kNone: none).
  void add_frames(uint64_t address, uint32_t module);
  Frame python_frame(uint64_t address) const;
  // Whether report node `node` is the frames (first, count) of frame_ids_ called from `caller`.
  bool is_node_of(StackNodeIndex node, StackNodeIndex caller, uint32_t first, uint32_t count) const;
  // The report node of trace node `trace_node` (made already, or 0, the root).
  StackNodeIndex node_of(uint32_t trace_node) const;
  // Makes the report nodes of frames (first, count) called from `caller` for trace node
  // `trace_node`; `first_time`: none were made for it before. Returns the innermost.
  StackNodeIndex add_nodes(uint32_t trace_node, bool first_time, StackNodeIndex caller, uint32_t first,
                           uint32_t count);

  // Whether the tree holds `stack`, asked of the tree while it is there.
  bool contains(uint32_t stack) const { return tree_forgotten_ ? stack < tree_stacks_ : tree_.contains(stack); }
  size_t tree_stacks() const { return tree_forgotten_ ? tree_stacks_ : tree_.stacks(); }

  const StackTree& tree_;
  const std::vector<std::vector<trace::Module>>& module_snapshots_;
  bool tree_forgotten_ = false;
  bool tree_read_ = true;  // false while resolve_while_read's tree is read
  // While the tree is read: the next stack to resolve, and those left waiting (tried again
  // when another module list was read).
  uint32_t next_read_stack_ = 0;
  std::vector<uint32_t> left_for_later_;
  static constexpr size_t kMostLeftForLater = 1 << 16;
  size_t tree_stacks_ = 0;  // the tree's stacks when it was let go
  const std::unordered_map<uint64_t, trace::PythonCode>& python_codes_;
  Report* report_;
  bool symbolize_;
  Symbolizer symbolizer_;
  ModuleIndex modules_;
  FrameInterner interner_;
  // Each trace node's report node (its address's innermost frame), and the module list its
  // addresses were resolved in: a trace node and its callers are made into report nodes
  // once, and stacks through them stop there. A stack resolves every address in its own
  // module list: under another list, a node is looked at again (and is mostly the same).
  // Once reserve() gave the tree's nodes their places, trace node n's report node is
  // slots_base_ + n, made the first time it is resolved, so that no table by trace node
  // says where it is; the outer frames of an address with inlined ones, and a node made
  // again under another list with other frames, go after them, found in moved_ (as every
  // node is without places).
  // By trace node: the module list it was made in, one more than the list's number (module
  // lists are few: 2 bytes a node where 4 were). A list past the range is marked
  // kMadeInAnother, which names none: such a node is looked at again each time.
  using MadeIn = uint16_t;
  static constexpr MadeIn kUnresolved = 0;
  static constexpr MadeIn kMadeInAnother = UINT16_MAX;
  static MadeIn made_in_mark(int snapshot) {
    return snapshot + 1 < kMadeInAnother ? static_cast<MadeIn>(snapshot + 1) : kMadeInAnother;
  }
  std::vector<MadeIn> made_in_;
  // A tree resolved while it is read has no places (it grows): each trace node's report
  // node is in this table instead, by trace node.
  bool by_trace_node_ = false;
  std::vector<StackNodeIndex> node_of_trace_node_;
  StackNodeIndex slots_base_ = 0;
  size_t slots_ = 0;  // the trace nodes with a place are those below it
  bool placed_ = false;
  absl::flat_hash_map<uint32_t, StackNodeIndex> moved_;
  std::vector<uint32_t> path_;      // the trace nodes of the stack being resolved, innermost first
  // Each trace stack's report stack: a look-up per site, figure and leak. Stacks named in
  // ascending order, each the next report stack (pass two names every site's so), are
  // numbered by rank from ascending_base_, a bit a trace stack where a list by trace stack
  // took a number a node of the tree. The others (named out of that order, or not in the
  // tree: a damaged trace) go in the hash table.
  bool numbers_next(uint32_t trace_stack, StackIndex index);
  AscendingNumbers ascending_;
  StackIndex ascending_base_ = 0;
  absl::flat_hash_map<uint32_t, StackIndex> index_of_other_stack_;

  // address -> its frames (first, count) in frame_ids_ as last found, in module `module`
  // for module list `snapshot` (Python frames' module is kPython, the same in every list):
  // one look-up a trace node where the address's module, then its frames, took two. An
  // address found in another module under another list has its frames in
  // frames_in_other_module_ (addresses are in one module in nearly every trace).
  static constexpr uint32_t kPython = ModuleIndex::kNone - 1;
  struct FramesAt {
    int snapshot = -1;
    uint32_t module = 0, first = 0, count = 0;
  };
  absl::flat_hash_map<uint64_t, FramesAt> frames_of_;
  absl::flat_hash_map<std::pair<uint64_t, uint32_t>, std::pair<uint32_t, uint32_t>> frames_in_other_module_;
  std::vector<FrameIndex> frame_ids_;
};

}  // namespace memstage::reports
