#include "reports/analysis/aggregate_capture.h"

#include <vector>

namespace memstage::reports {

StacksAtPeaks stacks_at_peaks_of_aggregate(const FirstPass& pass, size_t top_stacks) {
  StacksAtPeaks out;
  for (const auto& [key, p] : pass.agg_run_peak) {
    StackBytes& s = out.run_peak[figure_key(p.stack, p.stage)];
    s.stack = p.stack;
    s.bytes += p.bytes;
    s.blocks += p.blocks;
  }
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
  for (const auto& [key, site] : pass.agg_sites) {
    pass.sites.set(site.stack, site.stage, site.allocations, site.bytes_allocated, site.temporary_allocations);
    if (site.stage >= 0 && static_cast<size_t>(site.stage) < pass.stages.instances.size()) {
      StageInstance& s = pass.stages.instances[site.stage];
      s.allocations += site.allocations;
      s.bytes_allocated += site.bytes_allocated;
      s.temporary_allocations += site.temporary_allocations;
    }
  }
  for (const auto& [stage, r] : pass.agg_stages) {
    if (stage >= pass.stages.instances.size()) continue;
    pass.stages.instances[stage].frees = r.frees;
    pass.stages.instances[stage].retained_bytes = r.retained_bytes;
  }
}

}  // namespace memstage::reports
