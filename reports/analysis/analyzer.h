// Turns the trace files of one run into the analysis model (reports/model).
// Streams each trace twice: the first pass finds totals, stages and the moments of the
// peaks; the second replays up to those moments to see which stacks held the memory.
// Memory grows with the live blocks and distinct stacks, not with the trace's length.
#pragma once

#include <functional>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

// What `memstage run` knows about the run that the traces can't say.
struct RunInfo {
  std::vector<std::string> command;
  std::optional<uint64_t> pid;  // the process memstage started (absent in older run.json)
  int exit_code = 0;
  std::optional<int> signal;
  double duration_s = 0;
};

struct AnalysisOptions {
  size_t top_stacks = 20;     // stacks kept per stage at its peak
  size_t max_timeline_points = 2000;
  bool symbolize = true;
  // What the analysis keeps as text and lists from a trace: module lists, stage paths,
  // names. A few compressed bytes can describe a lot (a module list repeated a million
  // times, stages 256 deep with 4 KiB names): past this the analysis stops with
  // AnalysisLimitError rather than exhaust memory. A real run needs a few MB (Python
  // importing torch: ~10 MB of module lists).
  uint64_t max_kept_text_bytes = 1ull << 30;
  // Called with (bytes done, bytes in all) as the traces are read.
  std::function<void(uint64_t, uint64_t)> progress;
};

// A trace describes more than the analysis will keep (AnalysisOptions::max_kept_text_bytes).
class AnalysisLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Finds the trace files (trace.*.mst) in a run's output folder, oldest first.
std::vector<std::string> find_traces(const std::string& dir);

// Analyses the traces of one run; the first process started is the one reported, the
// others appear under `processes`. Throws trace::NotATraceError for a non-trace file.
Report analyze(const std::vector<std::string>& trace_paths, const std::optional<RunInfo>& run,
               const AnalysisOptions& options);

}  // namespace memstage::reports
