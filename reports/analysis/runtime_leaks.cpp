#include "reports/analysis/runtime_leaks.h"

#include <algorithm>

namespace memstage::reports {

uint8_t RuntimeLeaks::verdict_of(StackNodeIndex node) {
  const std::vector<StackNode>& nodes = report_.stack_nodes;
  if (verdicts_.size() < nodes.size()) verdicts_.resize(nodes.size(), 0);
  // Down to the first node known (or the root), then back up: no recursion on deep stacks.
  path_.clear();
  for (StackNodeIndex n = node; n != 0 && !(verdicts_[n] & kKnown); n = nodes[n].caller) path_.push_back(n);
  for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
    const StackNodeIndex caller = nodes[*it].caller;
    uint8_t verdict = kKnown | (caller != 0 ? verdicts_[caller] : 0);
    switch (owner_of(nodes[*it].frame)) {
      case FrameOwner::kRuntime: verdict |= kRuntimeFrame; break;
      case FrameOwner::kProgram: verdict = (verdict | kProgramFrame) & ~kImportInProgram; break;
      case FrameOwner::kImport:
        if (verdict & kProgramFrame) verdict |= kImportInProgram;
        break;
      case FrameOwner::kNeither: break;
    }
    verdicts_[*it] = verdict;
  }
  return node == 0 ? kKnown : verdicts_[node];
}

FrameOwner RuntimeLeaks::owner_of(FrameIndex index) {
  if (owner_of_frame_.size() < report_.frames.size()) owner_of_frame_.resize(report_.frames.size(), 0);
  uint8_t& known = owner_of_frame_[index];
  if (known == 0) {
    const Frame& frame = report_.frames[index];
    const bool suppressed = std::any_of(suppressions_.begin(), suppressions_.end(),
                                        [&](const std::string& pattern) { return matches_suppression(frame, pattern); });
    known = static_cast<uint8_t>(suppressed ? FrameOwner::kRuntime : frame_owner(frame)) + 1;
  }
  return static_cast<FrameOwner>(known - 1);
}

bool RuntimeLeaks::is_runtime(StackIndex stack) {
  const uint8_t verdict = verdict_of(report_.stacks[stack].innermost);
  if (verdict & kRuntimeFrame) return true;
  return program_frames_known_ && (!(verdict & kProgramFrame) || (verdict & kImportInProgram));
}

}  // namespace memstage::reports
