#include "reports/analysis/aggregate_capture.h"

#include <algorithm>
#include <vector>

namespace memstage::reports {

StacksAtPeaks stacks_at_peaks_of_aggregate(const FirstPass& pass, size_t top_stacks) {
  StacksAtPeaks out;
  out.run_peak.reserve(pass.agg_run_peak.size());  // one entry a site, the same keys
  for (const auto& [key, p] : pass.agg_run_peak) {
    out.run_peak.push_back(StacksAtPeaks::KeyedLive{key, p.bytes, p.blocks});
  }
  std::sort(out.run_peak.begin(), out.run_peak.end(), StacksAtPeaks::key_less);
  const auto listed = [&](const std::vector<trace::AggStackBytes>& stacks) {
    std::vector<StackBytes> top;
    for (const auto& s : stacks) {
      if (top.size() == top_stacks) break;
      top.push_back(StackBytes{s.stack, s.bytes, s.blocks});
    }
    return top;
  };
  for (const auto& [stage, r] : pass.agg_stages) {
    if (!r.top_stacks.empty()) out.stage_peaks[static_cast<int>(stage)] = listed(r.top_stacks);
  }
  if (pass.agg_ram_limit_stacks) out.stage_peaks[StacksAtPeaks::kRamLimit] = listed(*pass.agg_ram_limit_stacks);
  return out;
}

void apply_aggregate(FirstPass& pass) {
  if (pass.agg_snapshot) {
    pass.allocations = pass.agg_snapshot->allocations;
    pass.frees = pass.agg_snapshot->frees;
    pass.bytes_allocated = pass.agg_snapshot->bytes_allocated;
    pass.sites.set_temporary_allocations(pass.agg_snapshot->temporary_allocations);
  }
  const size_t stages = std::min(pass.agg_stage_counts.size(), pass.stages.instances.size());
  for (size_t stage = 0; stage < stages; ++stage) {
    const FirstPass::AggStageCounts& counts = pass.agg_stage_counts[stage];
    StageInstance& s = pass.stages.instances[stage];
    s.allocations += static_cast<uint64_t>(counts.allocations);
    s.bytes_allocated += static_cast<uint64_t>(counts.bytes_allocated);
    s.temporary_allocations += static_cast<uint64_t>(counts.temporary_allocations);
  }
  std::vector<FirstPass::AggStageCounts>().swap(pass.agg_stage_counts);
  for (const auto& [stage, r] : pass.agg_stages) {
    if (stage >= pass.stages.instances.size()) continue;
    pass.stages.instances[stage].frees = r.frees;
    pass.stages.instances[stage].retained_bytes = r.retained_bytes;
  }
}

}  // namespace memstage::reports
