// The trace's stacks (stack_tree.h) as the report's: symbolized frames, each distinct one
// stored once in Report::frames. A large trace (Python importing torch: 7e5 stacks, 4.6e7
// addresses in all) has under 1e5 distinct frames: each address is symbolized once and
// later occurrences reuse its frames' indices.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "profiler/trace/trace_reader.h"
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
  // into `report`. Without `symbolize`, native frames are module + offset.
  StackResolver(const StackTree& tree, const std::vector<std::vector<trace::Module>>& module_snapshots,
                const std::unordered_map<uint64_t, trace::PythonCode>& python_codes, Report& report, bool symbolize);

  // The report's stack for trace stack `trace_stack`, resolved on first use.
  StackIndex index_of(uint32_t trace_stack);

 private:
  Stack resolve(uint32_t trace_stack);
  // Appends to frame_ids_ the frames of an address inside `module` (ModuleIndex::kNone: none).
  void add_frames(uint64_t address, uint32_t module);
  void append_native(std::vector<FrameIndex>& out, uint64_t address, int snapshot);
  Frame python_frame(uint64_t address) const;

  const StackTree& tree_;
  const std::unordered_map<uint64_t, trace::PythonCode>& python_codes_;
  Report& report_;
  bool symbolize_;
  Symbolizer symbolizer_;
  ModuleIndex modules_;
  FrameInterner interner_;
  // The stack resolved last: its nodes by depth, its frames and where each address's
  // frames start (by index from its innermost address); the nodes of this one not shared.
  std::vector<uint32_t> previous_nodes_, own_nodes_;
  std::vector<FrameIndex> scratch_;
  std::vector<uint32_t> address_starts_;
  int previous_snapshot_ = -1;
  absl::flat_hash_map<uint32_t, StackIndex> indices_;

  // (address, module) -> (first, count) in frame_ids_.
  absl::flat_hash_map<std::pair<uint64_t, uint32_t>, std::pair<uint32_t, uint32_t>> frames_of_;
  std::vector<FrameIndex> frame_ids_;
  std::unordered_map<uint64_t, FrameIndex> python_ids_;
};

}  // namespace memstage::reports
