// Stages' records beyond their begin and end (recording.h): what the trace's end says of them.
#pragma once

#include "profiler/preload/recording_core.h"

namespace memstage::preload {

// The totals of dropped stage begins, where a limit was hit (the process's end).
void push_stage_limit_totals(ThreadState* ts);

}  // namespace memstage::preload
