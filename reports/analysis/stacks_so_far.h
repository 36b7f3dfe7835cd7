// The run so far's stacks as the endpoint serves them (harness/serve/run_so_far.h): every
// (stack, stage row) that holds memory now, and every site's allocation figures, from pass
// one's live heap, aggregate mode's sites and the site figures, read as they stand (nothing
// taken: the pass reads on). One step of report_so_far, for SoFarStacks::kEvery; the live
// view's few stacks held most are add_held_now's.
#pragma once

#include "reports/analysis/analyzer.h"
#include "reports/analysis/first_pass.h"
#include "reports/analysis/stack_resolver.h"
#include "reports/analysis/stage_rows.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

// Fills `report.leaks` with every (stack, stage row) holding memory now, largest first
// (/debug/pprof/heap's inuse_space), the runtime's marked as the analysis marks its leaks
// and counted as it counts them (the totals' leaked and runtime_held: held now),
// and `report.stack_figures` with each site's allocations and bytes allocated so far
// (/debug/pprof/allocs). Its cost is the live allocation infos and the sites, not the events.
void add_every_stack_so_far(const FirstPass& pass, const StageRows& stage_rows, StackResolver& stacks,
                            const AnalysisOptions& options, Report& report);

}  // namespace memstage::reports
