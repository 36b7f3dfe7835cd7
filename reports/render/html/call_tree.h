// The flame graph's call tree: a report's stacks merged from the outermost frame in, frames
// merging by what the page shows (label and module), not by address, so that calls from
// different lines of one function meet. Made of the stacks alone, so that `memstage run`
// can make it beside the analysis's last steps (AnalysisOptions::once_stacks_final) and
// hand it to render_html, which makes it itself otherwise: the same tree either way.
#pragma once

#include <cstdint>
#include <vector>

#include "reports/model/report_model.h"
#include "reports/model/stack_lists.h"

namespace memstage::reports {

struct CallTree {
  std::vector<uint32_t> parent{0};                        // node 0 is the root ("all"); parent < child always
  std::vector<FrameIndex> frame{FrameIndex{UINT32_MAX}};  // the first frame seen for the node
};

struct StacksCallTree {
  static constexpr uint32_t kNoLeaf = UINT32_MAX;
  CallTree tree;
  std::vector<uint32_t> leaf_of_stack;  // by stack: its innermost frame's node; kNoLeaf where left out
  bool every_stack = false;             // made of every stack of its lists
};

// The tree of the stacks `included` marks (every stack without it), walked in ascending
// order, each once: its numbering depends on the stacks alone.
StacksCallTree make_call_tree(const StackLists& lists, const std::vector<uint8_t>* included = nullptr);

}  // namespace memstage::reports
