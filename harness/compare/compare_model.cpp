#include "harness/compare/compare_model.h"

#include <algorithm>
#include <map>

#include "harness/files/report_figures.h"

namespace memstage::compare {

namespace {

using Json = nlohmann::json;

using files::Figure;
using files::ReportFigures;
using files::ScopeFigures;

// A figure compare shows as a number: 0 where the report did not measure it.
uint64_t bytes_of(const ScopeFigures& figures, Figure figure) {
  return static_cast<uint64_t>(figures[figure].value_or(0));
}

MemoryFigures memory_of(const ScopeFigures& f) {
  MemoryFigures m;
  m.peak_heap_bytes = bytes_of(f, Figure::kPeakHeapBytes);
  m.peak_rss_bytes = bytes_of(f, Figure::kPeakRssBytes);
  m.leaked_bytes = bytes_of(f, Figure::kLeakedBytes);
  m.fragmentation_ratio = f[Figure::kFragmentationRatio].value_or(0);
  m.fragmentation_estimated = f.fragmentation_estimated;
  m.live_bytes = bytes_of(f, Figure::kLiveBytes);
  m.allocator_in_use_bytes = bytes_of(f, Figure::kAllocatorInUseBytes);
  m.allocator_resident_bytes = bytes_of(f, Figure::kAllocatorResidentBytes);
  m.rss_bytes = bytes_of(f, Figure::kBreakdownRssBytes);
  m.tracer_bytes = bytes_of(f, Figure::kTracerBytes);
  m.breakdown_estimated = f.breakdown_estimated;
  return m;
}

ReportFigures figures_of(const RunRecord& run) {
  return files::read_figures(*run.report, run.planned.dir_name + "/report.json");
}

Json summary_json(const Summary& s) {
  if (s.count == 0) return nullptr;
  return Json{{"median", s.median}, {"min", s.min}, {"max", s.max}, {"count", s.count}};
}

nlohmann::ordered_json memory_json(const MemoryFigures& m) {
  nlohmann::ordered_json j;
  j["peak_heap_bytes"] = m.peak_heap_bytes;
  j["peak_rss_bytes"] = m.peak_rss_bytes;
  j["leaked_bytes"] = m.leaked_bytes;
  j["fragmentation"] = {{"ratio", m.fragmentation_ratio}, {"estimated", m.fragmentation_estimated}};
  j["rss_breakdown"] = {{"live_bytes", m.live_bytes},
                        {"allocator_in_use_bytes", m.allocator_in_use_bytes},
                        {"allocator_resident_bytes", m.allocator_resident_bytes},
                        {"rss_bytes", m.rss_bytes},
                        {"tracer_bytes", m.tracer_bytes},
                        {"estimated", m.breakdown_estimated}};
  return j;
}

nlohmann::ordered_json row_json(const RowFigures& row) {
  nlohmann::ordered_json j;
  if (!row.path.empty()) j["path"] = row.path;
  j["wall_time_s"] = summary_json(row.wall_time_s);
  j["stats_peak_rss_bytes"] = summary_json(row.peak_rss_bytes);
  j["memory"] = row.memory ? memory_json(*row.memory) : nlohmann::ordered_json(nullptr);
  return j;
}

}  // namespace

const RowFigures* SubjectResult::stage(const std::string& path) const {
  for (const RowFigures& r : stages) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

bool CompareResult::any_estimated() const {
  for (const SubjectResult& s : subjects) {
    if (s.totals.memory && (s.totals.memory->breakdown_estimated || s.totals.memory->fragmentation_estimated)) {
      return true;
    }
    for (const RowFigures& r : s.stages) {
      if (r.memory && (r.memory->breakdown_estimated || r.memory->fragmentation_estimated)) return true;
    }
  }
  return false;
}

namespace {

// One subject's rows: time and stats-mode RSS over its stats runs, memory from its full run.
SubjectResult subject_result(const Subject& subject, size_t index, const std::vector<RunRecord>& runs,
                             const std::vector<std::string>& stage_paths) {
  SubjectResult sr;
  sr.name = subject.name;
  sr.command = subject.command;
  if (subject.allocator) {
    sr.allocator_library = subject.allocator->library;
    sr.environment = subject.allocator->environment;
  }
  std::vector<double> total_times, total_rss;
  std::map<std::string, std::vector<double>> stage_times, stage_rss;
  std::optional<ReportFigures> full;
  for (const RunRecord& run : runs) {
    if (run.planned.subject != index || !run.report) continue;
    const std::string html = run.planned.dir_name + "/report.html";
    ReportFigures figures = figures_of(run);
    if (run.planned.mode == RunMode::kFull) {
      sr.full_report = html;
      sr.allocator = figures.allocator;
      sr.totals.memory = memory_of(figures.totals);
      full = std::move(figures);
      continue;
    }
    sr.stats_reports.push_back(html);
    total_times.push_back(figures.totals[Figure::kDurationS].value_or(run.duration_s));
    total_rss.push_back(figures.totals[Figure::kPeakRssBytes].value_or(0));
    for (const auto& [path, stage] : figures.stages) {
      stage_times[path].push_back(stage[Figure::kDurationS].value_or(0));
      stage_rss[path].push_back(stage[Figure::kPeakRssBytes].value_or(0));
    }
  }
  sr.totals.wall_time_s = summarize(total_times);
  sr.totals.peak_rss_bytes = summarize(total_rss);
  for (const std::string& path : stage_paths) {
    const ScopeFigures* full_stage = full ? full->stage(path) : nullptr;
    if (!full_stage && !stage_times.contains(path)) continue;
    RowFigures row;
    row.path = path;
    row.wall_time_s = summarize(stage_times[path]);
    row.peak_rss_bytes = summarize(stage_rss[path]);
    if (full_stage) row.memory = memory_of(*full_stage);
    sr.stages.push_back(std::move(row));
  }
  return sr;
}

}  // namespace

CompareResult build_compare(const std::vector<Subject>& subjects, const std::vector<RunRecord>& runs, unsigned repeat) {
  CompareResult result;
  result.repeat = repeat;
  result.runs = runs;
  // Stage order: first seen across all reports, full runs first (they come first in the plan).
  for (const RunRecord& run : runs) {
    if (!run.report) continue;
    for (const std::string& path : figures_of(run).stage_paths) {
      if (std::find(result.stage_paths.begin(), result.stage_paths.end(), path) == result.stage_paths.end()) {
        result.stage_paths.push_back(path);
      }
    }
  }
  for (size_t si = 0; si < subjects.size(); ++si) {
    result.subjects.push_back(subject_result(subjects[si], si, runs, result.stage_paths));
  }
  return result;
}

nlohmann::ordered_json compare_to_json(const CompareResult& result) {
  nlohmann::ordered_json j;
  j["schema"] = kCompareSchema;
  j["repeat"] = result.repeat;
  j["time_from"] = "stats-mode runs (median, min, max)";
  j["memory_from"] = "one full-mode run per subject";
  j["stage_paths"] = result.stage_paths;
  j["notes"] = result.notes;
  nlohmann::ordered_json subjects = nlohmann::ordered_json::array();
  for (const SubjectResult& s : result.subjects) {
    nlohmann::ordered_json sj;
    sj["name"] = s.name;
    sj["command"] = s.command;
    sj["allocator"] = s.allocator;
    sj["allocator_library"] = s.allocator_library;
    if (!s.environment.empty()) {
      nlohmann::ordered_json env = nlohmann::ordered_json::object();
      for (const auto& [name, value] : s.environment) env[name] = value;
      sj["environment"] = std::move(env);
    }
    sj["full_report"] = s.full_report;
    sj["stats_reports"] = s.stats_reports;
    sj["totals"] = row_json(s.totals);
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const RowFigures& r : s.stages) stages.push_back(row_json(r));
    sj["stages"] = std::move(stages);
    subjects.push_back(std::move(sj));
  }
  j["subjects"] = std::move(subjects);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < result.runs.size(); ++i) {
    const RunRecord& r = result.runs[i];
    nlohmann::ordered_json rj;
    rj["order"] = i;
    rj["subject"] = r.planned.subject < result.subjects.size() ? result.subjects[r.planned.subject].name : "";
    rj["mode"] = mode_name(r.planned.mode);
    rj["repeat"] = r.planned.repeat;
    rj["dir"] = r.planned.dir_name;
    rj["exit_code"] = r.exit_code;
    rj["duration_s"] = r.duration_s;
    rj["report"] = r.report ? r.planned.dir_name + "/report.json" : "";
    if (!r.error.empty()) rj["error"] = r.error;
    runs.push_back(std::move(rj));
  }
  j["runs"] = std::move(runs);
  return j;
}

}  // namespace memstage::compare
