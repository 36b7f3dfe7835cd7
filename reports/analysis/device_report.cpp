#include "reports/analysis/device_report.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "profiler/trace/trace_format.h"

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

// The device timeline, at most max_points: each bucket keeps its highest point.
std::vector<DeviceTimelinePoint> bucket_device_timeline(const std::vector<DeviceTimelinePoint>& points,
                                                        size_t max_points) {
  if (points.size() <= max_points || points.empty()) return points;
  std::vector<DeviceTimelinePoint> out;
  const double t0 = points.front().t_s, t1 = points.back().t_s;
  size_t i = 0;
  for (size_t b = 0; b < max_points && i < points.size(); ++b) {
    const double end = t0 + (t1 - t0) * static_cast<double>(b + 1) / static_cast<double>(max_points);
    size_t highest = i;
    const size_t first = i;
    while (i < points.size() && (points[i].t_s <= end || b + 1 == max_points)) {
      if (points[i].bytes > points[highest].bytes) highest = i;
      ++i;
    }
    if (i != first) out.push_back(points[highest]);
  }
  return out;
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

DeviceReport device_report(const DeviceMemoryReplay& device, StackResolver& stacks, const StageRows& stage_rows,
                           size_t top_stacks, size_t max_timeline_points) {
  DeviceReport d;
  d.totals = device.totals(kNsPerS);
  auto index_of = [&](uint32_t stack) { return stacks.index_of(stack); };
  std::vector<DeviceMemoryReplay::Block> live = device.live_blocks();
  for (auto& b : live) b.stage = stage_rows.row_of(b.stage);
  d.leaks = group_device_blocks(live, index_of);
  // At the peak: by stack alone, whatever stage allocated.
  std::vector<DeviceMemoryReplay::Block> at_peak = device.at_peak();
  for (auto& b : at_peak) b.stage = -1;
  for (const Leak& l : group_device_blocks(at_peak, index_of)) {
    if (d.top_stacks_at_peak.size() == top_stacks) break;
    d.top_stacks_at_peak.push_back(StackBytes{l.stack, l.bytes, l.blocks});
  }
  d.timeline = bucket_device_timeline(device.timeline(), max_timeline_points);
  for (DeviceTimelinePoint& p : d.timeline) p.stage = stage_rows.row_of(p.stage);
  d.unknown_frees = device.unknown_frees();
  return d;
}

}  // namespace memstage::reports
