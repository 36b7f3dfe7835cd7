#include "harness/cli/replay_non_heap.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/cli/child_process.h"
#include "harness/files/output_files.h"
#include "harness/files/report_json.h"
#include "reports/analysis/analyzer.h"

namespace memstage::harness {

namespace fs = std::filesystem;

namespace {

// A run's peak RSS less the tracer's own resident memory (report.json's
// peak_program_rss_bytes), for a folder of one process (a job's report sums its processes).
std::optional<uint64_t> peak_program_rss(const std::string& run, std::string& why_not) {
  std::error_code ec;
  if (!fs::is_directory(run, ec) || reports::find_traces(run).size() != 1) {
    why_not = "a trace given alone, or a run of several processes";
    return std::nullopt;
  }
  try {
    const nlohmann::json report = files::read_report_json(run);
    const nlohmann::json& peak = report["totals"]["peak_program_rss_bytes"];
    if (peak.is_number_unsigned()) return peak.get<uint64_t>();
    why_not = run + "/report.json has no peak_program_rss_bytes";
  } catch (const files::ReportFileError& e) {
    why_not = e.what();
  }
  return std::nullopt;
}

// The replayer's, nothing held, under glibc: in stats mode, whose tracer unwinds nothing and
// writes no events, for the same heap as a full-mode run's at a fraction of its time (torch_small:
// 0.6 s against 1.4 s, the peak 0.4 % apart; docs/performance.md).
std::optional<uint64_t> replayer_peak_program_rss(const std::string& memstage, const std::string& replayer,
                                                  const std::string& ops, const std::string& dir, std::string& why_not) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  files::create_output_folder(dir);
  const ChildResult child =
      run_child({memstage, "run", "-q", "--mode", "stats", "-o", dir, "--", replayer, ops}, {{"LD_PRELOAD", ""}});
  if (child.exit_code != 0) {
    why_not = fmt::format("the replayer's stats-mode run under glibc ({}) exited {}", dir, child.exit_code);
    return std::nullopt;
  }
  return peak_program_rss(dir, why_not);
}

}  // namespace

// The same heap under glibc in both runs, the tracer's own memory left out of each: what
// differs at the peaks is the memory outside the heap (code, libraries, stacks, pools).
NonHeapHold non_heap_hold(const std::string& run, const std::string& memstage, const std::string& replayer,
                          const std::string& ops, const std::string& calibration_dir) {
  std::string why_not;
  const std::optional<uint64_t> program = peak_program_rss(run, why_not);
  const std::optional<uint64_t> own =
      program ? replayer_peak_program_rss(memstage, replayer, ops, calibration_dir, why_not) : std::nullopt;
  if (!program || !own) {
    return {std::nullopt, "not held: the program's memory outside malloc (its code and libraries, mapped files, thread "
                          "stacks, its own pools; " + why_not + "), so each peak RSS here is the heap's share of the "
                          "program's"};
  }
  const uint64_t hold_bytes = *program > *own ? *program - *own : 0;
  return {hold_bytes,
          fmt::format("held beside the heap: {} bytes as pages touched from the replay's start, the program's peak RSS "
                      "({} bytes) less the replayer's ({} bytes), each in a run under glibc less the tracer's own "
                      "memory (the program's from the run's report.json, the replayer's holding nothing in a "
                      "stats-mode run, in calibration/): its memory outside the heap; each peak RSS here is an "
                      "estimate of the program's under that allocator (--heap-only leaves it out)",
                      hold_bytes, *program, *own)};
}

}  // namespace memstage::harness
