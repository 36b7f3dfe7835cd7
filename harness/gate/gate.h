// memstage gate: a report against a budget (limits) or a baseline (growth), as a CI verdict.
//
// The library behind `memstage gate` and `memstage run --budget`: budget parsing, the
// checks, and their table / JUnit / GitHub renderings. It reads report.json as the report
// contract defines it (docs/architecture.md), not the in-memory model, so that reports written by
// another version or machine gate the same way. Format of budget files: docs/budget.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace memstage::gate {

// Input the user must fix (malformed budget, unreadable report, bad option value). The
// CLI prints it as one line and exits 2, keeping exit 1 for "over budget".
class GateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Metric { kPeakHeap, kPeakRss, kLeaked, kFragmentation, kPeakDevice, kPeakHeapIncrease, kPeakRssIncrease, kRetained };

// A stage's own demand (how far the heap or RSS rose above its level at the stage's start)
// and what it still held at its end (retained): figures of stages, not of the totals.
inline bool stage_only(Metric metric) {
  return metric == Metric::kPeakHeapIncrease || metric == Metric::kPeakRssIncrease || metric == Metric::kRetained;
}

// The budget key ("peak_heap") and the report field it reads ("peak_heap_bytes").
std::string_view metric_key(Metric metric);

struct Limit {
  Metric metric;
  // Bytes for sizes, a ratio in 0..1 for fragmentation.
  double value;
};

struct StageBudget {
  std::string key;  // a stage path ("train/epoch") or a name unique to one path
  std::vector<Limit> limits;
};

struct Budget {
  std::vector<Limit> totals;
  std::vector<StageBudget> stages;  // in the file's order
};

// Parses a budget file's text; `source` names it in error messages ("budget.json: ...").
// Throws GateError naming the offending field for unknown keys, bad sizes or ratios,
// and for invalid JSON (with the parser's line and column).
Budget parse_budget(const std::string& text, const std::string& source);
Budget load_budget(const std::string& path);

// "5%", "0.05" -> 0.05. Nothing when the text is not a non-negative fraction.
std::optional<double> parse_fraction(const std::string& text);

// --max-growth, by the budget's rule for ratios: "5%" or "0.05"; a bare number above 1
// ("5", meant as 5 % or as +500 %?) is refused, as is a growth past 1,000,000 %. Throws
// GateError saying which.
double parse_max_growth(const std::string& text);

struct Check {
  std::string id;       // "totals.peak_rss", "stages.vectorize.peak_heap", "baseline.totals.leaked"
  std::string stage;    // the budget's stage key (or the baseline's stage path); "" for the totals
  Metric metric;
  double limit = 0;     // bytes or ratio; for baseline checks, the old value times (1 + growth)
  double measured = 0;  // bytes or ratio; 0 when missing
  bool missing = false; // the stage is not in the report: the check fails
  bool unmeasured = false;  // the report (or the baseline) did not measure the figure: the check fails
  bool skipped = false;     // a baseline check neither report measured: neither passed nor failed
  bool passed = true;
  std::string limit_text;     // as printed: "512 MiB", "30%", "+5% of 1.20 GiB"
  std::string measured_text;  // "600 MiB", "12%", "1.30 GiB (+8.3%)", "stage not in report"
  std::string message;        // one sentence for failures (JUnit, GitHub)
};

// One check per limit in the budget. A stage key matches stages by path; otherwise by
// name, provided the name belongs to one path only (GateError when it is ambiguous). A
// key matching no stage gives failing checks (the stage was renamed or skipped: a CI
// gate must not pass silently on it). A stage entered several times (each epoch) is held
// to its worst occurrence: highest peaks and fragmentation, leaked summed (one rule for
// every command: files::read_figures). A figure the report did not measure (leaks in stats
// mode, a field that is null or absent) fails its check; a malformed one is a GateError.
// `source` names the report in messages.
std::vector<Check> check_budget(const nlohmann::json& report, const Budget& budget,
                                const std::string& source = "report.json");

// peak_heap, peak_rss and leaked of the totals and of every stage path present in both
// reports: fails where the new figure exceeds old * (1 + max_growth). From 0 any growth fails.
// A figure one report measured and the other did not fails; one neither measured is skipped.
std::vector<Check> check_baseline(const nlohmann::json& report, const nlohmann::json& baseline, double max_growth,
                                  const std::string& source = "report.json",
                                  const std::string& baseline_source = "baseline");

// 0 when every check passed or was skipped, 1 otherwise.
int exit_code(const std::vector<Check>& checks);

std::string render_table(const std::vector<Check>& checks);
// JUnit XML: one <testcase> per check, <failure> for failing ones.
std::string render_junit(const std::vector<Check>& checks, const std::string& suite_name);
// The checks as JSON, for programs that act on them (the pytest plugin): {"checks": [{id,
// stage, metric, verdict ("ok", "over", "missing", "unmeasured", "skipped"), limit, measured,
// limit_text, measured_text, message}], "failed": N}.
std::string render_json(const std::vector<Check>& checks);
// GitHub Actions workflow commands: one "::error title=...::..." line per failure.
std::string render_github(const std::vector<Check>& checks, const std::string& report_path);

struct GateOptions {
  std::string budget_path;
  std::string baseline_path;
  std::optional<double> max_growth;
  std::string junit_path;
  std::string json_path;
  bool github = false;
  FILE* table_out = stdout;  // `run --budget` prints beside its summary, on stderr
};

// Everything `memstage gate` does: load, check, print the table (and annotations on
// stdout), write JUnit. Returns 0 (all pass) or 1 (over); throws GateError for input errors.
int run_gate(const std::string& report_path, const GateOptions& options);

}  // namespace memstage::gate
