// Chrome trace event format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
// Perfetto and chrome://tracing both read the JSON object form written here.
#include "reports/render/export/chrome_trace.h"

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "reports/render/model_json.h"

namespace memstage::reports {
namespace {

using nlohmann::json;

constexpr int kStageThread = 1;  // all stages on one track, so nesting shows by time
// Rows that group many instances of a path (reports/analysis/stage_rows.h) span from the
// first's start to the last's end, across the instances listed on their own: a track of
// their own keeps the nesting of the others.
constexpr int kGroupedStageThread = 2;

double to_us(double seconds) { return seconds * 1e6; }

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The process's and its tracks' names.
void add_metadata(json& events, const Report& report, uint64_t pid) {
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                    {"args", {{"name", "memstage: " + joined(report.command)}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", kStageThread},
                    {"args", {{"name", "stages"}}}});
  if (report.stage_grouping) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", kGroupedStageThread},
                      {"args", {{"name", "stages grouped by path"}}}});
  }
}

// A stage slice's arguments: the figures a viewer's panel shows, named and measured as in
// report.json (model_json.h).
json stage_args(const Report& report, const StageReport& s) {
  const json figures = model_json::memory_figures_json<json>(s.figures, model_json::measured_in(report));
  json args{{"path", s.path},
            {"closed", s.closed},
            {"retained_bytes", s.retained_bytes},
            {"fragmentation_ratio", figures["fragmentation"]["ratio"]}};
  for (const char* key : {"peak_heap_bytes", "peak_rss_bytes", "allocations", "bytes_allocated", "leaked_bytes"}) {
    args[key] = figures[key];
  }
  if (report.stage_grouping) args["instances"] = s.instances;
  return args;
}

// Stages: a child's slice is clamped into its parent's, since viewers nest "X" slices by
// time containment and rounding must not make a child stick out.
void add_stages(json& events, const Report& report, uint64_t pid) {
  const auto& stages = report.stages;
  std::vector<double> begin_us(stages.size()), end_us(stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    begin_us[i] = to_us(stages[i].start_s);
    end_us[i] = std::max(begin_us[i], to_us(stages[i].end_s));
    const int parent = stages[i].parent;
    if (parent >= 0 && static_cast<size_t>(parent) < i) {
      begin_us[i] = std::clamp(begin_us[i], begin_us[parent], end_us[parent]);
      end_us[i] = std::clamp(end_us[i], begin_us[i], end_us[parent]);
    }
  }
  // Outer slices first where two begin together, so viewers see the parent before its child.
  std::vector<size_t> order(stages.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (begin_us[a] != begin_us[b]) return begin_us[a] < begin_us[b];
    return stages[a].depth < stages[b].depth;
  });
  for (size_t i : order) {
    const auto& s = stages[i];
    events.push_back({{"name", s.name},
                      {"cat", "stage"},
                      {"ph", "X"},
                      {"ts", begin_us[i]},
                      {"dur", end_us[i] - begin_us[i]},
                      {"pid", pid},
                      {"tid", s.instances > 1 ? kGroupedStageThread : kStageThread},
                      {"args", stage_args(report, s)}});
  }
}

// Heap and RSS as two counters: one counter with two series would be drawn stacked,
// which reads as heap + RSS.
void add_counters(json& events, const Report& report, uint64_t pid) {
  for (const auto& p : report.timeline) {
    events.push_back({{"name", "heap"}, {"cat", "memory"}, {"ph", "C"}, {"ts", to_us(p.t_s)}, {"pid", pid}, {"tid", 0},
                      {"args", {{"heap_bytes", p.heap_bytes}}}});
    events.push_back({{"name", "rss"}, {"cat", "memory"}, {"ph", "C"}, {"ts", to_us(p.t_s)}, {"pid", pid}, {"tid", 0},
                      {"args", {{"rss_bytes", p.rss_bytes}}}});
  }
  if (report.totals.peak_heap_bytes > 0) {
    events.push_back({{"name", "peak heap"}, {"cat", "memory"}, {"ph", "i"}, {"s", "p"},
                      {"ts", to_us(report.totals.peak_heap_time_s)}, {"pid", pid}, {"tid", kStageThread},
                      {"args", {{"peak_heap_bytes", report.totals.peak_heap_bytes}}}});
  }
}

}  // namespace

std::string render_chrome_trace(const Report& report) {
  const uint64_t pid = report.processes.empty() ? 1 : report.processes.front().pid;
  json events = json::array();
  add_metadata(events, report, pid);
  add_stages(events, report, pid);
  add_counters(events, report, pid);
  json processes = json::array();
  for (const auto& p : report.processes) processes.push_back(model_json::process_json<json>(p));
  const json trace{{"traceEvents", std::move(events)},
                   {"displayTimeUnit", "ms"},
                   {"otherData",
                    {{"producer", "memstage"},
                     {"command", joined(report.command)},
                     {"allocator", report.allocator},
                     {"mode", report.mode},
                     {"duration_s", report.duration_s},
                     {"processes", std::move(processes)}}}};
  // Names come from the traced program and need not be valid UTF-8.
  return trace.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace memstage::reports
