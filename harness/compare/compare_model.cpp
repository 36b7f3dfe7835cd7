#include "harness/compare/compare_model.h"

#include <algorithm>
#include <map>

namespace memstage::compare {

namespace {

using Json = nlohmann::json;

template <typename T>
T get_or(const Json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    return fallback;
  }
}

// Per stage path in one report: its total time and the JSON of its (merged) figures.
struct StageAggregate {
  double duration_s = 0;
  MemoryFigures memory;
  bool seen = false;
};

std::map<std::string, StageAggregate> aggregate_stages(const Json& report, std::vector<std::string>* order) {
  std::map<std::string, StageAggregate> by_path;
  const auto it = report.find("stages");
  if (it == report.end() || !it->is_array()) return by_path;
  for (const Json& st : *it) {
    const std::string path = get_or<std::string>(st, "path", get_or<std::string>(st, "name", "?"));
    StageAggregate& agg = by_path[path];
    if (order && std::find(order->begin(), order->end(), path) == order->end()) order->push_back(path);
    // A row grouping several instances of its path (stage_grouping) says how long they were open.
    agg.duration_s += st.contains("open_s") ? get_or<double>(st, "open_s", 0)
                                             : std::max(0.0, get_or<double>(st, "end_s", 0) - get_or<double>(st, "start_s", 0));
    const MemoryFigures m = memory_figures(st);
    if (!agg.seen) {
      agg.memory = m;
    } else {
      const MemoryFigures before = agg.memory;
      agg.memory = m;  // the last breakdown and fragmentation
      agg.memory.peak_heap_bytes = std::max(before.peak_heap_bytes, m.peak_heap_bytes);
      agg.memory.peak_rss_bytes = std::max(before.peak_rss_bytes, m.peak_rss_bytes);
      agg.memory.leaked_bytes = before.leaked_bytes + m.leaked_bytes;
    }
    agg.seen = true;
  }
  return by_path;
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

MemoryFigures memory_figures(const Json& f) {
  MemoryFigures m;
  m.peak_heap_bytes = get_or<uint64_t>(f, "peak_heap_bytes", 0);
  m.peak_rss_bytes = get_or<uint64_t>(f, "peak_rss_bytes", 0);
  m.leaked_bytes = get_or<uint64_t>(f, "leaked_bytes", 0);
  const Json frag = f.is_object() && f.contains("fragmentation") ? f["fragmentation"] : Json::object();
  m.fragmentation_ratio = get_or<double>(frag, "ratio", 0);
  m.fragmentation_estimated = get_or<bool>(frag, "estimated", true);
  const Json b = f.is_object() && f.contains("rss_breakdown") ? f["rss_breakdown"] : Json::object();
  m.live_bytes = get_or<uint64_t>(b, "live_bytes", 0);
  m.allocator_in_use_bytes = get_or<uint64_t>(b, "allocator_in_use_bytes", 0);
  m.allocator_resident_bytes = get_or<uint64_t>(b, "allocator_resident_bytes", 0);
  m.rss_bytes = get_or<uint64_t>(b, "rss_bytes", 0);
  m.tracer_bytes = get_or<uint64_t>(b, "tracer_bytes", 0);
  m.breakdown_estimated = get_or<bool>(b, "estimated", true);
  return m;
}

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

CompareResult build_compare(const std::vector<Subject>& subjects, const std::vector<RunRecord>& runs, unsigned repeat) {
  CompareResult result;
  result.repeat = repeat;
  result.runs = runs;
  // Stage order: first seen across all reports, full runs first (they come first in the plan).
  for (const RunRecord& run : runs) {
    if (run.report) aggregate_stages(*run.report, &result.stage_paths);
  }
  for (size_t si = 0; si < subjects.size(); ++si) {
    SubjectResult sr;
    sr.name = subjects[si].name;
    sr.command = subjects[si].command;
    if (subjects[si].allocator) sr.allocator_library = subjects[si].allocator->library;
    std::vector<double> total_times, total_rss;
    std::map<std::string, std::vector<double>> stage_times, stage_rss;
    std::map<std::string, StageAggregate> full_stages;
    for (const RunRecord& run : runs) {
      if (run.planned.subject != si) continue;
      const std::string html = run.planned.dir_name + "/report.html";
      if (!run.report) continue;
      const Json& report = *run.report;
      if (run.planned.mode == RunMode::kFull) {
        sr.full_report = html;
        sr.allocator = get_or<std::string>(report, "allocator", "");
        sr.totals.memory = memory_figures(report.contains("totals") ? report["totals"] : Json::object());
        full_stages = aggregate_stages(report, nullptr);
      } else {
        sr.stats_reports.push_back(html);
        total_times.push_back(get_or<double>(report, "duration_s", run.duration_s));
        const Json totals = report.contains("totals") ? report["totals"] : Json::object();
        total_rss.push_back(static_cast<double>(get_or<uint64_t>(totals, "peak_rss_bytes", 0)));
        for (const auto& [path, agg] : aggregate_stages(report, nullptr)) {
          stage_times[path].push_back(agg.duration_s);
          stage_rss[path].push_back(static_cast<double>(agg.memory.peak_rss_bytes));
        }
      }
    }
    sr.totals.wall_time_s = summarize(total_times);
    sr.totals.peak_rss_bytes = summarize(total_rss);
    for (const std::string& path : result.stage_paths) {
      const auto full = full_stages.find(path);
      if (full == full_stages.end() && !stage_times.contains(path)) continue;
      RowFigures row;
      row.path = path;
      row.wall_time_s = summarize(stage_times[path]);
      row.peak_rss_bytes = summarize(stage_rss[path]);
      if (full != full_stages.end()) row.memory = full->second.memory;
      sr.stages.push_back(std::move(row));
    }
    result.subjects.push_back(std::move(sr));
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
  nlohmann::ordered_json subjects = nlohmann::ordered_json::array();
  for (const SubjectResult& s : result.subjects) {
    nlohmann::ordered_json sj;
    sj["name"] = s.name;
    sj["command"] = s.command;
    sj["allocator"] = s.allocator;
    sj["allocator_library"] = s.allocator_library;
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
