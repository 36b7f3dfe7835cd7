// The run so far, as the endpoint serves it: the one place that says where the figures of
// a run still being written come from. The traces' followers (TraceBeingWritten, the live
// view's too) read each chunk once, as it is written; each refresh is their pass one as it
// stands (TraceBeingWritten::so_far), so its cost is the live blocks, the sites and the
// stacks it names, not the capture's length (docs/performance.md).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "reports/analysis/analyzer.h"
#include "reports/model/report_model.h"

namespace memstage::harness {

// What the routes read of it: processes, timeline, totals, stages and growth (/metrics);
// every stack held now as `leaks` (/debug/pprof/heap's inuse) and every site's allocation
// figures as `stack_figures` (/debug/pprof/allocs): SoFarStacks::kEvery. No pass two: the
// stacks at the peaks are the final report's.
class RunSoFar {
 public:
  // The run being written into `dir`, read by `followers` where the run has them (memstage
  // run's and attach's read-ahead, lent: it outlives this), else by followers of its own.
  RunSoFar(const std::string& dir, reports::TraceBeingWritten* followers);
  // Nothing while no trace has begun. Throws what reading a trace threw.
  std::optional<reports::Report> report();

 private:
  std::unique_ptr<reports::TraceBeingWritten> own_;
  reports::TraceBeingWritten* followers_;
};

}  // namespace memstage::harness
