#include "reports/render/json/json_report.h"

#include <cstdio>

namespace memstage::reports {
namespace {

using Json = nlohmann::ordered_json;

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Json frame_json(const Frame& f) {
  Json j;
  j["function"] = f.function;
  j["file"] = f.file;
  j["line"] = f.line;
  j["module"] = f.module;
  // Hex strings: addresses do not fit in a JavaScript number.
  j["address"] = hex(f.address);
  j["module_offset"] = hex(f.module_offset);
  j["inlined"] = f.inlined;
  j["allocator"] = f.allocator;
  j["kind"] = f.kind;
  return j;
}

Json stack_json(const Report& r, StackIndex index) {
  Json frames = Json::array();
  if (index < r.stacks.size()) {
    for (FrameIndex id : r.frames_of(r.stacks[index])) frames.push_back(frame_json(r.frame(id)));
  }
  return frames;
}

Json stack_bytes_json(const Report& r, const StackBytes& s) {
  return Json{{"bytes", s.bytes}, {"blocks", s.blocks}, {"stack", stack_json(r, s.stack)}};
}

Json breakdown_json(const RssBreakdown& b) {
  Json out{{"live_bytes", b.live_bytes},
           {"allocator_in_use_bytes", b.allocator_in_use_bytes},
           {"allocator_resident_bytes", b.allocator_resident_bytes},
           {"rss_bytes", b.rss_bytes},
           {"tracer_bytes", b.tracer_bytes},
           {"estimated", b.estimated},
           {"t_s", b.t_s}};
  if (b.shares) {
    out["shares"] = Json{{"shared_bytes", b.shares->shared_bytes},
                         {"private_bytes", b.shares->private_bytes},
                         {"pss_bytes", b.shares->pss_bytes},
                         {"t_s", b.shares->t_s}};
  }
  return out;
}

Json fragmentation_json(const Fragmentation& f) { return Json{{"ratio", f.ratio}, {"estimated", f.estimated}}; }

Json stage_ref(const Report& r, int stage) {
  return stage >= 0 && static_cast<size_t>(stage) < r.stages.size() ? Json(r.stages[stage].path) : Json(nullptr);
}

Json device_cache_json(const std::optional<DeviceCache>& c) {
  if (!c) return nullptr;
  return Json{{"reserved_bytes", c->reserved_bytes},
              {"allocated_bytes", c->allocated_bytes},
              {"cached_bytes", c->reserved_bytes - std::min(c->reserved_bytes, c->allocated_bytes)},
              {"peak_reserved_bytes", c->peak_reserved_bytes},
              {"peak_allocated_bytes", c->peak_allocated_bytes}};
}

Json device_figures_json(const DeviceFigures& f) {
  return Json{{"peak_bytes", f.peak_bytes},       {"peak_time_s", f.peak_time_s},
              {"allocations", f.allocations},     {"frees", f.frees},
              {"bytes_allocated", f.bytes_allocated}, {"retained_bytes", f.retained_bytes},
              {"leaked_bytes", f.leaked_bytes},   {"leaked_blocks", f.leaked_blocks},
              {"cache", device_cache_json(f.cache)}};
}

Json device_json(const Report& r) {
  if (!r.device) return nullptr;
  const DeviceReport& d = *r.device;
  Json j = device_figures_json(d.totals);
  j.erase("retained_bytes");
  Json top = Json::array();
  for (const auto& s : d.top_stacks_at_peak) top.push_back(stack_bytes_json(r, s));
  j["top_stacks_at_peak"] = std::move(top);
  Json leaks = Json::array();
  for (const Leak& l : d.leaks) {
    leaks.push_back(Json{{"bytes", l.bytes}, {"blocks", l.blocks}, {"stage", stage_ref(r, l.stage)},
                         {"stack", stack_json(r, l.stack)}});
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

Json optional_number(const std::optional<uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }

// A figure the mode did not measure is null, never 0: a reader (the gate) must not take it for "none".
Json unless_unmeasured(bool measured, uint64_t value) { return measured ? Json(value) : Json(nullptr); }

Json job_json(const Report& r) {
  const JobReport& job = r.job;
  Json tops = Json::array();
  for (const JobStack& s : job.top_stacks_at_peak) {
    Json top = stack_bytes_json(r, s.held);
    top["process"] = s.process;
    top["pid"] = s.process < r.processes.size() ? r.processes[s.process].pid : 0;
    tops.push_back(std::move(top));
  }
  Json timeline = Json::array();
  for (const JobTimelinePoint& p : job.timeline) {
    timeline.push_back(Json{{"t_s", p.t_s},
                            {"heap_bytes", p.heap_bytes},
                            {"rss_bytes", p.rss_bytes},
                            {"pss_bytes", optional_number(p.pss_bytes)},
                            {"process_heap_bytes", p.process_heap_bytes}});
  }
  return Json{{"processes", r.processes.size()},
              {"peak_heap_bytes", job.peak_heap_bytes},
              {"peak_heap_time_s", job.peak_heap_time_s},
              {"peak_rss_bytes", job.peak_rss_bytes},
              {"peak_rss_time_s", job.peak_rss_time_s},
              {"peak_pss_bytes", optional_number(job.peak_pss_bytes)},
              {"peak_pss_time_s", job.peak_pss_time_s},
              {"peak_uss_bytes", optional_number(job.peak_uss_bytes)},
              {"rss_overstates", job.rss_overstates},
              {"clock_resolution_s", job.clock_resolution_s},
              {"top_stacks_at_peak", std::move(tops)},
              {"timeline", std::move(timeline)}};
}

// How the run went and how it was recorded.
void add_run(Json& j, const Report& r) {
  j["schema"] = kReportSchema;
  j["command"] = r.command;
  j["exit_code"] = r.exit_code ? Json(*r.exit_code) : Json(nullptr);
  j["signal"] = r.signal ? Json(*r.signal) : Json(nullptr);
  j["oom_kill"] = r.oom_kill ? Json{{"cgroup", r.oom_kill->cgroup},
                                    {"cgroup_version", r.oom_kill->cgroup_version},
                                    {"limit_bytes", r.oom_kill->limit_bytes ? Json(*r.oom_kill->limit_bytes) : Json(nullptr)},
                                    {"processes_killed", r.oom_kill->processes_killed}}
                             : Json(nullptr);
  j["duration_s"] = r.duration_s;
  j["allocator"] = r.allocator;
  j["mode"] = r.mode;
  j["leaks_measured"] = r.leaks_measured;
  j["leak_suppressions"] = r.leak_suppressions;
  j["attached"] = r.attached;
  j["sampling"] = r.sampling ? Json{{"rate_bytes", r.sampling->rate_bytes},
                                    {"samples", r.sampling->samples},
                                    {"estimated", {"stacks", "leaks", "sites", "growth"}},
                                    {"exact", {"peak_heap_bytes", "allocations", "frees", "bytes_allocated"}},
                                    {"relative_standard_error", "sqrt(rate_bytes / bytes)"},
                                    {"note", r.sampling->note}}
                             : Json(nullptr);
  j["python"] = r.python ? Json{{"version", r.python->version}, {"allocator", r.python->allocator}} : Json(nullptr);
}

// The whole run's figures.
void add_totals(Json& j, const Report& r) {
  const MemoryFigures& t = r.totals;
  Json totals;
  totals["peak_heap_bytes"] = t.peak_heap_bytes;
  totals["peak_heap_time_s"] = t.peak_heap_time_s;
  totals["peak_rss_bytes"] = t.peak_rss_bytes;
  totals["peak_program_rss_bytes"] = t.peak_program_rss_bytes;
  totals["tracer_peak_bytes"] = t.tracer_peak_bytes;
  totals["allocations"] = t.allocations;
  totals["frees"] = t.frees;
  totals["bytes_allocated"] = t.bytes_allocated;
  totals["temporary_allocations"] = unless_unmeasured(r.temporaries_measured(), t.temporary_allocations);
  totals["leaked_bytes"] = unless_unmeasured(r.leaks_measured, t.leaked_bytes);
  totals["leaked_blocks"] = unless_unmeasured(r.leaks_measured, t.leaked_blocks);
  totals["runtime_held_bytes"] = unless_unmeasured(r.leaks_measured, r.runtime_held.bytes);
  totals["runtime_held_blocks"] = unless_unmeasured(r.leaks_measured, r.runtime_held.blocks);
  totals["mmap_peak_bytes"] = t.mmap_peak_bytes;
  totals["fragmentation"] = fragmentation_json(t.fragmentation);
  totals["rss_breakdown"] = breakdown_json(t.rss_breakdown);
  Json top = Json::array();
  for (const auto& s : r.top_stacks_at_peak) top.push_back(stack_bytes_json(r, s));
  totals["top_stacks_at_peak"] = std::move(top);
  totals["peak_device_bytes"] = r.device ? Json(r.device->totals.peak_bytes) : Json(nullptr);
  j["totals"] = std::move(totals);
}

// A row per stage (or per path of grouped instances), and the grouping when there is one.
void add_stages(Json& j, const Report& r) {
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
    st["peak_heap_bytes"] = f.peak_heap_bytes;
    st["peak_heap_time_s"] = f.peak_heap_time_s;
    st["peak_heap_increase_bytes"] = s.peak_heap_increase_bytes;
    st["peak_rss_bytes"] = f.peak_rss_bytes;
    st["peak_rss_increase_bytes"] = s.peak_rss_increase_bytes;
    st["peak_program_rss_bytes"] = f.peak_program_rss_bytes;
    st["tracer_peak_bytes"] = f.tracer_peak_bytes;
    st["allocations"] = f.allocations;
    st["frees"] = f.frees;
    st["bytes_allocated"] = f.bytes_allocated;
    st["temporary_allocations"] = unless_unmeasured(r.temporaries_measured(), f.temporary_allocations);
    // Blocks are followed where leaks are: stats mode measures neither.
    st["retained_bytes"] = unless_unmeasured(r.leaks_measured, s.retained_bytes);
    st["leaked_bytes"] = unless_unmeasured(r.leaks_measured, f.leaked_bytes);
    st["leaked_blocks"] = unless_unmeasured(r.leaks_measured, f.leaked_blocks);
    st["mmap_peak_bytes"] = f.mmap_peak_bytes;
    st["fragmentation"] = fragmentation_json(f.fragmentation);
    st["rss_breakdown"] = breakdown_json(f.rss_breakdown);
    Json tops = Json::array();
    for (const auto& sb : s.top_stacks_at_peak) tops.push_back(stack_bytes_json(r, sb));
    st["top_stacks_at_peak"] = std::move(tops);
    st["peak_device_bytes"] = s.device ? Json(s.device->peak_bytes) : Json(nullptr);
    if (s.device) {
      Json device = device_figures_json(*s.device);
      Json held = Json::array();
      for (const auto& sb : s.device->top_stacks_at_peak) held.push_back(stack_bytes_json(r, sb));
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
void add_leaks(Json& j, const Report& r) {
  Json leaks = Json::array();
  for (const Leak& l : r.leaks) {
    leaks.push_back(Json{{"bytes", l.bytes}, {"blocks", l.blocks}, {"stage", stage_ref(r, l.stage)},
                         {"stack", stack_json(r, l.stack)}, {"runtime", l.runtime}});
  }
  j["leaks"] = std::move(leaks);
}

// Growth over time: null where the capture has no snapshots of live bytes per stack.
void add_growth(Json& j, const Report& r) {
  if (r.growth) {
    Json growth = Json::array();
    for (const GrowingStack& g : r.growth->stacks) {
      Json t = Json::array(), live = Json::array();
      for (const GrowthPoint& p : g.series) {
        t.push_back(p.t_s);
        live.push_back(p.live_bytes);
      }
      Json entry{{"bytes_per_s", g.bytes_per_s},
                 {"live_bytes", g.live_bytes},
                 {"since_s", g.since_s},
                 {"r_squared", g.r_squared},
                 {"stack", stack_json(r, g.stack)},
                 {"series", Json{{"t_s", std::move(t)}, {"live_bytes", std::move(live)}}}};
      // Sample mode: the rate is an estimate, with its expected error.
      if (g.relative_standard_error) entry["relative_standard_error"] = *g.relative_standard_error;
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
void add_timeline(Json& j, const Report& r) {
  Json timeline = Json::array();
  for (const TimelinePoint& p : r.timeline) {
    timeline.push_back(Json{{"t_s", p.t_s},
                            {"heap_bytes", p.heap_bytes},
                            {"rss_bytes", p.rss_bytes},
                            {"tracer_bytes", p.tracer_bytes},
                            {"stage", stage_ref(r, p.stage)}});
  }
  j["timeline"] = std::move(timeline);
  j["device"] = device_json(r);
}

// Every process of the job, the job's figures and the RAM limit's crossing.
void add_processes(Json& j, const Report& r) {
  Json processes = Json::array();
  for (const ProcessReport& p : r.processes) {
    processes.push_back(Json{{"pid", p.pid},
                             {"parent_pid", p.parent_pid},
                             {"command", p.command},
                             {"peak_heap_bytes", p.peak_heap_bytes},
                             {"peak_rss_bytes", p.peak_rss_bytes},
                             {"complete", p.complete},
                             {"ended", p.ended},
                             {"exec_path", p.ended == "exec" ? Json(p.exec_path) : Json(nullptr)},
                             {"exit_code", p.exit_code ? Json(*p.exit_code) : Json(nullptr)},
                             {"signal", p.signal ? Json(*p.signal) : Json(nullptr)},
                             {"start_s", p.start_s},
                             {"end_s", p.end_s},
                             {"heap_at_job_peak_bytes", p.heap_at_job_peak_bytes},
                             {"peak_pss_bytes", optional_number(p.peak_pss_bytes)},
                             {"peak_uss_bytes", optional_number(p.peak_uss_bytes)},
                             {"host", p.host},
                             {"rank", optional_number(p.rank)},
                             {"local_rank", optional_number(p.local_rank)},
                             {"world_size", optional_number(p.world_size)}});
  }
  j["processes"] = std::move(processes);
  j["job"] = job_json(r);
  if (r.ram_limit) {
    const RamLimitReport& l = *r.ram_limit;
    Json tops = Json::array();
    for (const auto& sb : l.top_stacks) tops.push_back(stack_bytes_json(r, sb));
    j["ram_limit"] = Json{{"limit_bytes", l.limit_bytes}, {"passed", true},    {"t_s", l.t_s},
                          {"rss_bytes", l.rss_bytes},     {"stage", stage_ref(r, l.stage)}, {"top_stacks", std::move(tops)}};
  } else {
    j["ram_limit"] = nullptr;
  }
}

// What the report warns of and what the capture could not give.
void add_notes(Json& j, const Report& r) {
  j["warnings"] = r.warnings;
  if (!r.capture_notes.empty()) j["capture_notes"] = r.capture_notes;
}

}  // namespace

Json report_to_json(const Report& r) {
  Json j;
  add_run(j, r);
  add_totals(j, r);
  add_stages(j, r);
  add_leaks(j, r);
  add_growth(j, r);
  add_timeline(j, r);
  add_processes(j, r);
  add_notes(j, r);
  return j;
}

std::string render_json(const Report& report) {
  // Stage and function names are whatever bytes the program used: replace invalid UTF-8
  // rather than fail to write the report.
  return report_to_json(report).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace memstage::reports
