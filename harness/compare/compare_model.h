// The side-by-side model of `memstage compare`: runs' report.json files (report contract,
// docs/architecture.md) → per subject and per stage, time as median and range over the stats-mode runs,
// memory from the subject's full-mode run. compare.json is this model as written.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/compare/run_plan.h"
#include "harness/compare/statistics.h"

namespace memstage::compare {

inline constexpr const char* kCompareSchema = "memstage.compare/1";

// One run as it happened, in execution order.
struct RunRecord {
  PlannedRun planned;
  int exit_code = 0;
  double duration_s = 0;                 // wall time of `memstage run`'s child, from the report
  std::optional<nlohmann::json> report;  // its report.json; nullopt when none was written
  std::string error;                     // why there is no report
};

// Memory figures of one stage (or the totals) from one full-mode report.
struct MemoryFigures {
  uint64_t peak_heap_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  uint64_t leaked_bytes = 0;
  double fragmentation_ratio = 0;
  bool fragmentation_estimated = true;
  uint64_t live_bytes = 0;
  uint64_t allocator_in_use_bytes = 0;
  uint64_t allocator_resident_bytes = 0;
  uint64_t rss_bytes = 0;
  uint64_t tracer_bytes = 0;
  bool breakdown_estimated = true;
};

struct RowFigures {
  std::string path;        // stage path; "" for the totals
  Summary wall_time_s;     // over the stats-mode runs (stage: end_s - start_s, summed over repeats of the path)
  Summary peak_rss_bytes;  // over the stats-mode runs: RSS without the full tracer's stack tables
  std::optional<MemoryFigures> memory;  // from the full-mode run; nullopt when it has no such stage
};

struct SubjectResult {
  std::string name;
  std::vector<std::string> command;
  std::string allocator;          // as the tracer detected it in the full run ("" if unknown)
  std::string allocator_library;  // what was preloaded; "" for none
  Environment environment;        // a tuning's variables (--tune); empty for none
  std::string full_report;        // relative path of the full run's report.html ("" if none)
  std::vector<std::string> stats_reports;
  RowFigures totals;
  std::vector<RowFigures> stages;  // in the order of stage_paths, only those present
  const RowFigures* stage(const std::string& path) const;
};

struct CompareResult {
  unsigned repeat = 0;
  std::vector<std::string> stage_paths;  // the union, in first-seen order
  std::vector<SubjectResult> subjects;
  std::vector<RunRecord> runs;  // execution order
  // What the comparison cannot show, said with it (memstage replay's limits).
  std::vector<std::string> notes;
  bool any_estimated() const;
};

// A stage path that occurs several times in one report (a stage per epoch) counts once,
// merged by files::read_figures' rule, as gate, diff and scale merge it. Throws
// files::ReportFileError for a run's report holding a malformed figure.
CompareResult build_compare(const std::vector<Subject>& subjects, const std::vector<RunRecord>& runs, unsigned repeat);

nlohmann::ordered_json compare_to_json(const CompareResult& result);

}  // namespace memstage::compare
