// The run so far (TraceBeingWritten::so_far): the analysis's steps (analyzer.cpp) over the
// first passes of traces still being written, without pass two.
#pragma once

#include <vector>

#include "reports/analysis/analyzer.h"
#include "reports/analysis/first_pass.h"
#include "reports/model/report_model.h"
#include "reports/symbolize/symbolizer.h"

namespace memstage::reports {

// `files`: the traces with a process record, none of them changing meanwhile. `symbolizer`
// is lent for the stacks named and given back, its modules open for the next call.
Report report_so_far(std::vector<const TraceFile*> files, const AnalysisOptions& options, Symbolizer& symbolizer,
                     SoFarStacks which = SoFarStacks::kTopHeld);

}  // namespace memstage::reports
