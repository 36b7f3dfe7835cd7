// A report's frames, stack nodes and stacks read without the Report that holds them: what
// is made of the stacks alone (the page's call tree) can then be made on another thread
// while the analysis goes on filling the Report's other parts.
#pragma once

#include <span>

#include "reports/model/report_model.h"

namespace memstage::reports {

struct StackLists {
  std::span<const Frame> frames;
  std::span<const StackNode> nodes;
  std::span<const Stack> stacks;

  static StackLists of(const Report& report) { return {report.frames, report.stack_nodes, report.stacks}; }
};

}  // namespace memstage::reports
