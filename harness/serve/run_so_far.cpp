#include "harness/serve/run_so_far.h"

#include "reports/analysis/analyzer.h"

namespace memstage::harness {

std::optional<reports::Report> report_so_far(const std::string& dir) {
  const auto traces = reports::find_traces(dir);
  if (traces.empty()) return std::nullopt;
  // No run.json yet: memstage writes it when the program has ended.
  return reports::analyze(traces, std::nullopt, reports::AnalysisOptions{});
}

}  // namespace memstage::harness
