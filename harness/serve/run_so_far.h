// The run so far, as the endpoint serves it: the one place that says where the figures of
// a run still being written come from (today: the analysis of its traces as written until
// now, anew each time), so that a faster source (TraceBeingWritten::so_far, the live view's)
// replaces this function alone.
#pragma once

#include <optional>
#include <string>

#include "reports/model/report_model.h"

namespace memstage::harness {

// What the routes read of it: processes, timeline, totals, stages and growth (/metrics);
// every stack held now as `leaks` (/debug/pprof/heap's in use) and `stack_figures`
// (/debug/pprof/allocs). A source that names only the largest stacks held, or leaves out
// the stack figures (so_far has no pass two), serves a partial heap profile and no allocs.
// The report of the run being written into `dir`; nothing while it has no trace yet.
// Throws what the analysis throws (a trace it cannot read).
std::optional<reports::Report> report_so_far(const std::string& dir);

}  // namespace memstage::harness
