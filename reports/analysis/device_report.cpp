#include "reports/analysis/device_report.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "profiler/trace/trace_format.h"
#include "reports/model/thin_series.h"

namespace memstage::reports {
namespace {

using trace::kNsPerS;

// Device blocks grouped by (stack, stage), largest first, stacks mapped into the report.
template <typename IndexOf>
std::vector<Leak> group_device_blocks(const std::vector<DeviceMemoryReplay::Block>& blocks, IndexOf index_of) {
  std::map<std::pair<uint32_t, int>, Leak> by_site;
  for (const auto& b : blocks) {
    Leak& l = by_site[{b.stack, b.stage}];
    l.bytes += b.bytes;
    ++l.blocks;
    l.stage = b.stage;
    l.stack = b.stack;
  }
  std::vector<Leak> out;
  for (auto& [site, l] : by_site) {
    l.stack = index_of(l.stack);
    out.push_back(l);
  }
  std::stable_sort(out.begin(), out.end(), [](const Leak& a, const Leak& b) { return a.bytes > b.bytes; });
  return out;
}

// Blocks held at a peak, by stack alone (whatever stage allocated them), the largest
// top_stacks.
template <typename IndexOf>
std::vector<StackBytes> top_device_stacks(std::vector<DeviceMemoryReplay::Block> blocks, IndexOf index_of,
                                          size_t top_stacks) {
  for (auto& b : blocks) b.stage = -1;
  std::vector<StackBytes> out;
  for (const Leak& l : group_device_blocks(blocks, index_of)) {
    if (out.size() == top_stacks) break;
    out.push_back(StackBytes{l.stack, l.bytes, l.blocks});
  }
  return out;
}

// The device timeline, at most max_points: each span of time keeps its highest point.
std::vector<DeviceTimelinePoint> bucket_device_timeline(const std::vector<DeviceTimelinePoint>& points,
                                                        size_t max_points) {
  if (points.size() <= max_points || points.empty()) return points;
  const auto keep = thin_series(
      points.size(), max_points, [&](size_t i) { return points[i].t_s; },
      [&](size_t i, size_t j) { return points[i].bytes > points[j].bytes; });
  return points_at(points, keep);
}

}  // namespace

DeviceFigures device_stage_figures(const DeviceMemoryReplay::StageFigures& s) {
  DeviceFigures f;
  f.peak_bytes = s.peak_bytes;
  f.peak_time_s = s.peak_ns / kNsPerS;
  f.allocations = s.allocations;
  f.frees = s.frees;
  f.bytes_allocated = s.bytes_allocated;
  f.retained_bytes = s.retained_bytes;
  f.leaked_bytes = s.leaked_bytes;
  f.leaked_blocks = s.leaked_blocks;
  f.cache = s.cache;
  return f;
}

std::unordered_map<size_t, std::vector<StackBytes>> device_stacks_at_stage_peaks(const DeviceMemoryReplay& device,
                                                                                  StackResolver& stacks,
                                                                                  const StageRows& stage_rows,
                                                                                  size_t top_stacks) {
  const auto& figures = device.stages();
  std::unordered_map<int, size_t> row_peak;  // row -> the instance whose device peak it reports
  for (size_t i = 0; i < figures.size(); ++i) {
    auto [it, added] = row_peak.try_emplace(stage_rows.row_of(static_cast<int>(i)), i);
    if (!added && figures[i].peak_bytes > figures[it->second].peak_bytes) it->second = i;
  }
  std::vector<size_t> instances;
  for (const auto& [row, instance] : row_peak) {
    if (figures[instance].peak_bytes > 0) instances.push_back(instance);
  }
  std::sort(instances.begin(), instances.end());  // stacks resolved in stage order, run after run
  std::vector<uint64_t> peak_events;
  for (size_t instance : instances) peak_events.push_back(figures[instance].peak_event);
  std::vector<std::vector<DeviceMemoryReplay::Block>> held = device.live_after(peak_events);
  auto index_of = [&](uint32_t stack) { return stacks.index_of(stack); };
  std::unordered_map<size_t, std::vector<StackBytes>> out;
  for (size_t k = 0; k < instances.size(); ++k) {
    out[instances[k]] = top_device_stacks(std::move(held[k]), index_of, top_stacks);
  }
  return out;
}

DeviceReport device_report(const DeviceMemoryReplay& device, StackResolver& stacks, const StageRows& stage_rows,
                           size_t top_stacks, size_t max_timeline_points) {
  DeviceReport d;
  d.totals = device.totals(kNsPerS);
  auto index_of = [&](uint32_t stack) { return stacks.index_of(stack); };
  std::vector<DeviceMemoryReplay::Block> live = device.live_blocks();
  for (auto& b : live) b.stage = stage_rows.row_of(b.stage);
  d.leaks = group_device_blocks(live, index_of);
  d.top_stacks_at_peak = top_device_stacks(device.at_peak(), index_of, top_stacks);
  d.timeline = bucket_device_timeline(device.timeline(), max_timeline_points);
  for (DeviceTimelinePoint& p : d.timeline) p.stage = stage_rows.row_of(p.stage);
  d.unknown_frees = device.unknown_frees();
  return d;
}

}  // namespace memstage::reports
