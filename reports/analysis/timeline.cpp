#include "reports/analysis/timeline.h"

#include <algorithm>

#include "reports/model/thin_series.h"

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
  return thin_timeline(points, max_points);
}

}  // namespace memstage::reports
