#include "reports/render/json/json_report.h"

#include <cstdio>
#include <unordered_map>

#include "reports/render/frame_label.h"
#include "reports/render/model_json.h"

namespace memstage::reports {
namespace {

using Json = nlohmann::ordered_json;
using namespace model_json;

Json frame_json(const Frame& f) {
  Json j;
  j["function"] = f.function;
  j["file"] = f.file;
  j["line"] = f.line;
  j["module"] = f.module;
  j["address"] = hex_address(f.address);
  j["module_offset"] = hex_address(f.module_offset);
  j["inlined"] = f.inlined;
  j["allocator"] = f.allocator;
  j["kind"] = f.kind;
  return j;
}

// The stacks report.json names, each once (schema 2): "stacks" lists each as the indices of
// its frames in "frames", innermost first, each distinct frame once there; every other list
// names a stack by its index in "stacks". Written whole, a Python program's report repeated
// the same hundred frames for each of its 500 leaks (pprof and memray intern likewise).
class JsonStacks {
 public:
  explicit JsonStacks(const Report& r) : r_(r) {}
  // The stack's index in "stacks", added on first use; null for a stack the report lacks.
  Json ref(StackIndex index) {
    if (index >= r_.stacks.size()) return nullptr;
    const auto [it, added] = index_of_stack_.try_emplace(index, stacks_.size());
    if (added) {
      Json frames = Json::array();
      for (FrameIndex id : r_.frames_of(r_.stacks[index])) frames.push_back(frame_ref(id));
      stacks_.push_back(std::move(frames));
    }
    return it->second;
  }
  void put(Json& j) {
    j["frames"] = std::move(frames_);
    j["stacks"] = std::move(stacks_);
  }

 private:
  size_t frame_ref(FrameIndex id) {
    const auto [it, added] = index_of_frame_.try_emplace(id, frames_.size());
    if (added) frames_.push_back(frame_json(r_.frame(id)));
    return it->second;
  }
  const Report& r_;
  std::unordered_map<StackIndex, size_t> index_of_stack_;
  std::unordered_map<FrameIndex, size_t> index_of_frame_;
  Json frames_ = Json::array();
  Json stacks_ = Json::array();
};

Json stack_bytes_json(JsonStacks& stacks, const StackBytes& s) {
  return Json{{"bytes", s.bytes}, {"blocks", s.blocks}, {"stack", stacks.ref(s.stack)}};
}

Json stage_ref(const Report& r, int stage) {
  return stage >= 0 && static_cast<size_t>(stage) < r.stages.size() ? Json(r.stages[stage].path) : Json(nullptr);
}

Json device_json(const Report& r, JsonStacks& stacks) {
  if (!r.device) return nullptr;
  const DeviceReport& d = *r.device;
  Json j = device_figures_json<Json>(d.totals);
  j.erase("retained_bytes");
  Json top = Json::array();
  for (const auto& s : d.top_stacks_at_peak) top.push_back(stack_bytes_json(stacks, s));
  j["top_stacks_at_peak"] = std::move(top);
  Json leaks = Json::array();
  for (const Leak& l : d.leaks) {
    leaks.push_back(Json{{"bytes", l.bytes}, {"blocks", l.blocks}, {"stage", stage_ref(r, l.stage)},
                         {"stack", stacks.ref(l.stack)}});
  }
  j["leaks"] = std::move(leaks);
  Json points = Json::array();
  for (const DeviceTimelinePoint& p : d.timeline) {
    points.push_back(Json{{"t_s", p.t_s}, {"bytes", p.bytes}, {"stage", stage_ref(r, p.stage)}});
  }
  j["timeline"] = std::move(points);
  j["unknown_frees"] = d.unknown_frees;
  return j;
}

Json job_json(const Report& r, JsonStacks& stacks) {
  const JobReport& job = r.job;
  Json tops = Json::array();
  for (const JobStack& s : job.top_stacks_at_peak) {
    Json top = stack_bytes_json(stacks, s.held);
    top["process"] = s.process;
    top["pid"] = s.process < r.processes.size() ? r.processes[s.process].pid : 0;
    tops.push_back(std::move(top));
  }
  Json timeline = Json::array();
  for (const JobTimelinePoint& p : job.timeline) {
    timeline.push_back(Json{{"t_s", p.t_s},
                            {"heap_bytes", p.heap_bytes},
                            {"rss_bytes", p.rss_bytes},
                            {"pss_bytes", optional_json<Json>(p.pss_bytes)},
                            {"process_heap_bytes", p.process_heap_bytes}});
  }
  Json j{{"processes", r.processes.size()}};
  put_job_peaks(j, job);
  j["top_stacks_at_peak"] = std::move(tops);
  j["timeline"] = std::move(timeline);
  return j;
}

// How the run went and how it was recorded.
void add_run(Json& j, const Report& r) {
  j["schema"] = kReportSchema;
  j["command"] = r.command;
  j["exit_code"] = r.exit_code ? Json(*r.exit_code) : Json(nullptr);
  j["signal"] = r.signal ? Json(*r.signal) : Json(nullptr);
  j["oom_kill"] = oom_kill_json<Json>(r.oom_kill);
  j["duration_s"] = r.duration_s;
  j["allocator"] = r.allocator;
  j["mode"] = r.mode;
  j["leaks_measured"] = r.leaks_measured;
  j["leak_suppressions"] = r.leak_suppressions;
  j["attached"] = r.attached;
  j["sampling"] = sampling_json<Json>(r.sampling);
  j["python"] = python_json<Json>(r.python);
}

// The whole run's figures.
void add_totals(Json& j, const Report& r, JsonStacks& stacks) {
  const MemoryFigures& t = r.totals;
  Json totals;
  const Measured measured = measured_in(r);
  put_peaks_and_counts(totals, t, measured);
  put_leaks(totals, t, measured);
  totals["runtime_held_bytes"] = unless_unmeasured<Json>(r.leaks_measured, r.runtime_held.bytes);
  totals["runtime_held_blocks"] = unless_unmeasured<Json>(r.leaks_measured, r.runtime_held.blocks);
  put_layout(totals, t);
  Json top = Json::array();
  for (const auto& s : r.top_stacks_at_peak) top.push_back(stack_bytes_json(stacks, s));
  totals["top_stacks_at_peak"] = std::move(top);
  totals["peak_device_bytes"] = r.device ? Json(r.device->totals.peak_bytes) : Json(nullptr);
  j["totals"] = std::move(totals);
}

// A row per stage (or per path of grouped instances), and the grouping when there is one.
void add_stages(Json& j, const Report& r, JsonStacks& stacks) {
  Json stages = Json::array();
  for (const StageReport& s : r.stages) {
    const MemoryFigures& f = s.figures;
    Json st;
    st["name"] = s.name;
    st["path"] = s.path;
    st["depth"] = s.depth;
    st["parent"] = stage_ref(r, s.parent);
    st["start_s"] = s.start_s;
    st["end_s"] = s.end_s;
    st["closed"] = s.closed;
    // Only where instances were grouped by path: a run under the limit reads as before.
    if (r.stage_grouping) {
      st["instances"] = s.instances;
      st["open_s"] = stage_open_s(s);
    }
    put_peaks_and_counts(st, f, measured_in(r));
    // The stage's own demand, whatever earlier stages left live.
    st["peak_heap_increase_bytes"] = s.peak_heap_increase_bytes;
    st["peak_rss_increase_bytes"] = s.peak_rss_increase_bytes;
    // Blocks are followed where leaks are: stats mode measures neither.
    st["retained_bytes"] = unless_unmeasured<Json>(r.leaks_measured, s.retained_bytes);
    put_leaks(st, f, measured_in(r));
    put_layout(st, f);
    Json tops = Json::array();
    for (const auto& sb : s.top_stacks_at_peak) tops.push_back(stack_bytes_json(stacks, sb));
    st["top_stacks_at_peak"] = std::move(tops);
    st["peak_device_bytes"] = s.device ? Json(s.device->peak_bytes) : Json(nullptr);
    if (s.device) {
      Json device = device_figures_json<Json>(*s.device);
      Json held = Json::array();
      for (const auto& sb : s.device->top_stacks_at_peak) held.push_back(stack_bytes_json(stacks, sb));
      device["top_stacks_at_peak"] = std::move(held);
      st["device"] = std::move(device);
    } else {
      st["device"] = nullptr;
    }
    stages.push_back(std::move(st));
  }
  j["stages"] = std::move(stages);
  if (r.stage_grouping) {
    const StageGrouping& g = *r.stage_grouping;
    j["stage_grouping"] = Json{{"instances", g.instances},
                               {"rows", g.rows},
                               {"ungrouped_limit", g.ungrouped_limit},
                               {"first_kept", g.first_kept},
                               {"note", g.note}};
  }
}

// The program's leaks by stack and stage, then the runtime's.
void add_leaks(Json& j, const Report& r, JsonStacks& stacks) {
  Json leaks = Json::array();
  for (const Leak& l : r.leaks) {
    leaks.push_back(Json{{"bytes", l.bytes}, {"blocks", l.blocks}, {"stage", stage_ref(r, l.stage)},
                         {"stack", stacks.ref(l.stack)}, {"runtime", l.runtime}});
  }
  j["leaks"] = std::move(leaks);
}

// Growth over time: null where the capture has no snapshots of live bytes per stack.
void add_growth(Json& j, const Report& r, JsonStacks& stacks) {
  if (r.growth) {
    Json growth = Json::array();
    for (const GrowingStack& g : r.growth->stacks) {
      Json entry;
      put_growth_fit(entry, g);
      entry["stack"] = stacks.ref(g.stack);
      put_growth_series(entry, g);
      growth.push_back(std::move(entry));
    }
    j["growth"] = std::move(growth);
    j["growth_snapshots"] = Json{{"count", r.growth->snapshots}, {"interval_s", r.growth->interval_s}};
    if (!r.growth->estimate_note.empty()) j["growth_snapshots"]["estimate_note"] = r.growth->estimate_note;
  } else {
    j["growth"] = nullptr;
    j["growth_snapshots"] = nullptr;
  }
}

// The run's heap and RSS over time, and the device's.
void add_timeline(Json& j, const Report& r, JsonStacks& stacks) {
  Json timeline = Json::array();
  for (const TimelinePoint& p : r.timeline) {
    timeline.push_back(Json{{"t_s", p.t_s},
                            {"heap_bytes", p.heap_bytes},
                            {"rss_bytes", p.rss_bytes},
                            {"tracer_bytes", p.tracer_bytes},
                            {"stage", stage_ref(r, p.stage)}});
  }
  j["timeline"] = std::move(timeline);
  j["device"] = device_json(r, stacks);
}

// Every process of the job, the job's figures and the RAM limit's crossing.
void add_processes(Json& j, const Report& r, JsonStacks& stacks) {
  Json processes = Json::array();
  for (const ProcessReport& p : r.processes) {
    processes.push_back(process_json<Json>(p));
  }
  j["processes"] = std::move(processes);
  j["job"] = job_json(r, stacks);
  if (r.ram_limit) {
    const RamLimitReport& l = *r.ram_limit;
    Json tops = Json::array();
    for (const auto& sb : l.top_stacks) tops.push_back(stack_bytes_json(stacks, sb));
    j["ram_limit"] = Json{{"limit_bytes", l.limit_bytes}, {"passed", true},    {"t_s", l.t_s},
                          {"rss_bytes", l.rss_bytes},     {"stage", stage_ref(r, l.stage)}, {"top_stacks", std::move(tops)}};
  } else {
    j["ram_limit"] = nullptr;
  }
  // The limit given, passed or not (auto: the cgroup's).
  j["ram_limit_bytes"] = r.ram_limit_bytes ? Json(*r.ram_limit_bytes) : Json(nullptr);
}

// What the report warns of and what the capture could not give.
void add_notes(Json& j, const Report& r) {
  j["warnings"] = r.warnings;
  if (!r.capture_notes.empty()) j["capture_notes"] = r.capture_notes;
}

}  // namespace

Json report_to_json(const Report& r) {
  Json j;
  JsonStacks stacks(r);
  add_run(j, r);
  add_totals(j, r, stacks);
  add_stages(j, r, stacks);
  add_leaks(j, r, stacks);
  add_growth(j, r, stacks);
  add_timeline(j, r, stacks);
  add_processes(j, r, stacks);
  add_notes(j, r);
  stacks.put(j);
  return j;
}

std::string render_json(const Report& report) {
  // Stage and function names are whatever bytes the program used: replace invalid UTF-8
  // rather than fail to write the report.
  return report_to_json(report).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace memstage::reports
