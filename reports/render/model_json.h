// The model's types as JSON, one serializer each, for every renderer that writes JSON:
// report.json (json_report.cpp), the page's data (render_html.cpp) and the Chrome trace
// (chrome_trace.cpp). Templates over the JSON type: report.json keeps its fields in the
// contract's order (nlohmann::ordered_json), the others need no order (nlohmann::json).
#pragma once

#include <algorithm>
#include <optional>

#include "reports/model/report_model.h"

namespace memstage::reports::model_json {

// What the mode measured. report.json writes a figure it did not as null, never 0, so a
// reader (the gate) cannot take it for "none"; the page says so from its own flags.
struct Measured {
  bool leaks = true;
  bool temporaries = true;
};

inline Measured measured_in(const Report& r) { return Measured{r.leaks_measured, r.temporaries_measured()}; }

template <class Json, class T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

template <class Json>
Json unless_unmeasured(bool measured, uint64_t value) {
  return measured ? Json(value) : Json(nullptr);
}

template <class Json>
Json fragmentation_json(const Fragmentation& f) {
  return Json{{"ratio", f.ratio}, {"estimated", f.estimated}};
}

template <class Json>
Json rss_breakdown_json(const RssBreakdown& b) {
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

// MemoryFigures in three parts, in the contract's order: report.json puts a row's own
// fields between them (a stage's retained bytes, the run's runtime-held bytes).
// The highs, and what was allocated and freed.
template <class Json>
void put_peaks_and_counts(Json& out, const MemoryFigures& f, Measured m) {
  out["peak_heap_bytes"] = f.peak_heap_bytes;
  out["peak_heap_time_s"] = f.peak_heap_time_s;
  out["peak_rss_bytes"] = f.peak_rss_bytes;
  out["peak_program_rss_bytes"] = f.peak_program_rss_bytes;
  out["tracer_peak_bytes"] = f.tracer_peak_bytes;
  out["allocations"] = f.allocations;
  out["frees"] = f.frees;
  out["bytes_allocated"] = f.bytes_allocated;
  out["temporary_allocations"] = unless_unmeasured<Json>(m.temporaries, f.temporary_allocations);
}

template <class Json>
void put_leaks(Json& out, const MemoryFigures& f, Measured m) {
  out["leaked_bytes"] = unless_unmeasured<Json>(m.leaks, f.leaked_bytes);
  out["leaked_blocks"] = unless_unmeasured<Json>(m.leaks, f.leaked_blocks);
}

// Memory outside malloc and how the allocator's memory splits.
template <class Json>
void put_layout(Json& out, const MemoryFigures& f) {
  out["mmap_peak_bytes"] = f.mmap_peak_bytes;
  out["fragmentation"] = fragmentation_json<Json>(f.fragmentation);
  out["rss_breakdown"] = rss_breakdown_json<Json>(f.rss_breakdown);
}

template <class Json>
Json memory_figures_json(const MemoryFigures& f, Measured m = {}) {
  Json out = Json::object();
  put_peaks_and_counts(out, f, m);
  put_leaks(out, f, m);
  put_layout(out, f);
  return out;
}

template <class Json>
Json device_cache_json(const std::optional<DeviceCache>& c) {
  if (!c) return nullptr;
  return Json{{"reserved_bytes", c->reserved_bytes},
              {"allocated_bytes", c->allocated_bytes},
              {"cached_bytes", c->reserved_bytes - std::min(c->reserved_bytes, c->allocated_bytes)},
              {"peak_reserved_bytes", c->peak_reserved_bytes},
              {"peak_allocated_bytes", c->peak_allocated_bytes}};
}

template <class Json>
Json device_figures_json(const DeviceFigures& f) {
  return Json{{"peak_bytes", f.peak_bytes},
              {"peak_time_s", f.peak_time_s},
              {"allocations", f.allocations},
              {"frees", f.frees},
              {"bytes_allocated", f.bytes_allocated},
              {"retained_bytes", f.retained_bytes},
              {"leaked_bytes", f.leaked_bytes},
              {"leaked_blocks", f.leaked_blocks},
              {"cache", device_cache_json<Json>(f.cache)}};
}

template <class Json>
Json process_json(const ProcessReport& p) {
  return Json{{"pid", p.pid},
              {"parent_pid", p.parent_pid},
              {"command", p.command},
              {"peak_heap_bytes", p.peak_heap_bytes},
              {"peak_rss_bytes", p.peak_rss_bytes},
              {"complete", p.complete},
              {"ended", p.ended},
              {"exec_path", p.ended == "exec" ? Json(p.exec_path) : Json(nullptr)},
              {"exit_code", optional_json<Json>(p.exit_code)},
              {"signal", optional_json<Json>(p.signal)},
              {"start_s", p.start_s},
              {"end_s", p.end_s},
              {"heap_at_job_peak_bytes", p.heap_at_job_peak_bytes},
              {"peak_pss_bytes", optional_json<Json>(p.peak_pss_bytes)},
              {"peak_uss_bytes", optional_json<Json>(p.peak_uss_bytes)},
              {"host", p.host},
              {"rank", optional_json<Json>(p.rank)},
              {"local_rank", optional_json<Json>(p.local_rank)},
              {"world_size", optional_json<Json>(p.world_size)}};
}

// The job's peaks over its processes on one clock (its timeline and stacks apart: the
// report lists points, the page columns).
template <class Json>
void put_job_peaks(Json& out, const JobReport& job) {
  out["peak_heap_bytes"] = job.peak_heap_bytes;
  out["peak_heap_time_s"] = job.peak_heap_time_s;
  out["peak_rss_bytes"] = job.peak_rss_bytes;
  out["peak_rss_time_s"] = job.peak_rss_time_s;
  out["peak_pss_bytes"] = optional_json<Json>(job.peak_pss_bytes);
  out["peak_pss_time_s"] = job.peak_pss_time_s;
  out["peak_uss_bytes"] = optional_json<Json>(job.peak_uss_bytes);
  out["rss_overstates"] = job.rss_overstates;
  out["clock_resolution_s"] = job.clock_resolution_s;
}

// A growing stack's fit, then its series as columns (its stack, between them in
// report.json, apart: frames in the report, an index on the page).
template <class Json>
void put_growth_fit(Json& out, const GrowingStack& g) {
  out["bytes_per_s"] = g.bytes_per_s;
  out["live_bytes"] = g.live_bytes;
  out["since_s"] = g.since_s;
  out["r_squared"] = g.r_squared;
}

// The error only where the rate is an estimate (sample mode).
template <class Json>
void put_growth_series(Json& out, const GrowingStack& g) {
  Json t = Json::array(), live = Json::array();
  for (const GrowthPoint& p : g.series) {
    t.push_back(p.t_s);
    live.push_back(p.live_bytes);
  }
  out["series"] = Json{{"t_s", std::move(t)}, {"live_bytes", std::move(live)}};
  if (g.relative_standard_error) out["relative_standard_error"] = *g.relative_standard_error;
}

template <class Json>
Json python_json(const std::optional<PythonRun>& python) {
  return python ? Json{{"version", python->version}, {"allocator", python->allocator}} : Json(nullptr);
}

// The OOM killer's work: in report.json, and in run.json, where memstage run keeps it for the
// reports made later.
template <class Json>
Json oom_kill_json(const std::optional<OomKill>& oom) {
  if (!oom) return nullptr;
  return Json{{"cgroup", oom->cgroup},
              {"cgroup_version", oom->cgroup_version},
              {"limit_bytes", oom->limit_bytes ? Json(*oom->limit_bytes) : Json(nullptr)},
              {"processes_killed", oom->processes_killed}};
}

template <class Json>
Json sampling_json(const std::optional<SamplingReport>& s) {
  if (!s) return nullptr;
  return Json{{"rate_bytes", s->rate_bytes},
              {"samples", s->samples},
              {"estimated", {"stacks", "leaks", "sites", "growth"}},
              {"exact", {"peak_heap_bytes", "allocations", "frees", "bytes_allocated"}},
              {"relative_standard_error", "sqrt(rate_bytes / bytes)"},
              {"note", s->note}};
}

}  // namespace memstage::reports::model_json
