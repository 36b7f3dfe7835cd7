// The run so far, as the endpoint serves it: the one place that says where the figures of
// a run still being written come from (today: the analysis of its traces as written until
// now, anew each time), so that a faster source (TraceBeingWritten::so_far, the live view's)
// replaces this function alone.
#pragma once

#include <optional>
#include <string>

#include "reports/model/report_model.h"

namespace memstage::harness {

// The report of the run being written into `dir`; nothing while it has no trace yet.
// Throws what the analysis throws (a trace it cannot read).
std::optional<reports::Report> report_so_far(const std::string& dir);

}  // namespace memstage::harness
