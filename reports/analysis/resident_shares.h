// What of a process's resident pages it shares with other processes, at a given moment:
// the /proc/self/smaps_rollup sample nearest that moment (the tracer takes them less often
// than RSS, and at stage edges), so that an RSS breakdown can say how much of its RSS is
// copy-on-write pages or libraries another process also holds.
#pragma once

#include <optional>
#include <vector>

#include "profiler/trace/trace_reader.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

// The sample nearest `t_s` (seconds on the trace's clock; the earlier of two as near);
// nothing without samples. `samples` in trace order.
std::optional<ResidentShares> resident_shares_at(const std::vector<trace::MemorySharesRecord>& samples, double t_s);

}  // namespace memstage::reports
