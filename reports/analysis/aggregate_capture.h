// Aggregate mode's capture (the tracer folded every allocation into figures per stack and
// stage in the process, trace_format.h kAgg*): what pass one kept of its records, turned
// into the figures full mode takes from the events.
#pragma once

#include <cstddef>

#include "reports/analysis/first_pass.h"
#include "reports/analysis/peak_snapshots.h"

namespace memstage::reports {

// The stacks at the peaks, as the tracer recorded them (full mode replays the events for
// them: pass two).
StacksAtPeaks stacks_at_peaks_of_aggregate(const FirstPass& pass, size_t top_stacks);

// The counts full mode takes from the events, from the latest snapshot and the sites' and
// stages' latest figures.
void apply_aggregate(FirstPass& pass);

}  // namespace memstage::reports
