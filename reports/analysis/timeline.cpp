#include "reports/analysis/timeline.h"

#include <algorithm>

namespace memstage::reports {

std::vector<TimelinePoint> TimelineAggregator::report(size_t max_points, double peak_heap_time_s,
                                                      uint64_t peak_heap_bytes) const {
  // The peak as a point of its own, with the RSS and stage of the point before it.
  TimelinePoint peak{peak_heap_time_s, peak_heap_bytes, 0, 0, -1};
  for (const auto& p : points_) {
    if (p.t_s <= peak_heap_time_s) {
      peak.rss_bytes = p.rss_bytes;
      peak.tracer_bytes = p.tracer_bytes;
      peak.stage = p.stage;
    }
  }
  std::vector<TimelinePoint> points = points_;
  points.push_back(peak);
  std::stable_sort(points.begin(), points.end(),
                   [](const TimelinePoint& a, const TimelinePoint& b) { return a.t_s < b.t_s; });
  if (points.size() <= max_points) return points;
  // Keep each bucket's highest heap and RSS so that no peak disappears.
  const double t0 = points.front().t_s, t1 = points.back().t_s;
  const size_t buckets = max_points / 2;
  std::vector<TimelinePoint> out;
  size_t i = 0;
  for (size_t b = 0; b < buckets && i < points.size(); ++b) {
    const double end = t0 + (t1 - t0) * static_cast<double>(b + 1) / static_cast<double>(buckets);
    size_t heap_max = i, rss_max = i;
    const size_t first = i;
    while (i < points.size() && (points[i].t_s <= end || b + 1 == buckets)) {
      if (points[i].heap_bytes > points[heap_max].heap_bytes) heap_max = i;
      if (points[i].rss_bytes > points[rss_max].rss_bytes) rss_max = i;
      ++i;
    }
    if (i == first) continue;
    out.push_back(points[std::min(heap_max, rss_max)]);
    if (heap_max != rss_max) out.push_back(points[std::max(heap_max, rss_max)]);
  }
  return out;
}

}  // namespace memstage::reports
