// Which leaked stacks are the runtime's (runtime_frames.h), one verdict per stack node,
// so that tens of thousands of leaked stacks sharing their outer frames are walked once.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "reports/analysis/runtime_frames.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

class RuntimeLeaks {
 public:
  // `program_frames_known`: the program's own code shows in the stacks as Python frames of
  // its files (a Python run with its frames): a stack with none of them is the interpreter's.
  // `suppressions`: the user's patterns (runtime_frames.h, matches_suppression); a frame
  // they match holds its blocks apart as the runtime's do.
  RuntimeLeaks(const Report& report, bool program_frames_known, std::vector<std::string> suppressions = {})
      : report_(report), program_frames_known_(program_frames_known), suppressions_(std::move(suppressions)) {}

  // Whether a block leaked with this stack is held by the runtime for the process's life.
  bool is_runtime(StackIndex stack);

 private:
  // What the frames from `node` outwards say: a runtime frame among them, a program frame,
  // an import inside the innermost program frame so far.
  static constexpr uint8_t kKnown = 1, kRuntimeFrame = 2, kProgramFrame = 4, kImportInProgram = 8;
  uint8_t verdict_of(StackNodeIndex node);
  // Whose a frame is, the user's suppressions first: once a frame, where the nodes that
  // hold it are many (each call site of a function under each of its callers).
  FrameOwner owner_of(FrameIndex frame);

  const Report& report_;
  bool program_frames_known_;
  std::vector<std::string> suppressions_;
  std::vector<uint8_t> verdicts_;  // by stack node
  std::vector<uint8_t> owner_of_frame_;  // by frame: its FrameOwner + 1, 0 not yet known
  std::vector<StackNodeIndex> path_;
};

}  // namespace memstage::reports
