// Device memory (CUDA and the like, device_memory.h's replay) as the report's: per stage,
// and for the run with its leaks and the stacks at its peak grouped by stack, the
// timeline at most so many points.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "reports/analysis/device_memory.h"
#include "reports/analysis/stack_resolver.h"
#include "reports/analysis/stage_rows.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

DeviceFigures device_stage_figures(const DeviceMemoryReplay::StageFigures& s);

// The device memory held at each stage row's device peak, by stack, largest first, at most
// top_stacks: keyed by the instance whose device peak its row reports (the first with the
// highest, as StageRows merges them). Stacks resolved through `stacks`.
std::unordered_map<size_t, std::vector<StackBytes>> device_stacks_at_stage_peaks(const DeviceMemoryReplay& device,
                                                                                  StackResolver& stacks,
                                                                                  const StageRows& stage_rows,
                                                                                  size_t top_stacks);

// Stacks resolved through `stacks`, stages named by their rows.
DeviceReport device_report(const DeviceMemoryReplay& device, StackResolver& stacks, const StageRows& stage_rows,
                           size_t top_stacks, size_t max_timeline_points);

}  // namespace memstage::reports
