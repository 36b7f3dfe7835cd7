// The heap and RSS over time, one aggregator of the analysis (reports/analysis): a point at
// every RSS sample, stage edge and the run's end. Fed by pass one whatever the capture:
// full mode's events, stats and sample modes' heap counters, aggregate mode's heap records
// all reach it through reach() and add_point().
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

class TimelineAggregator {
 public:
  // The heap reached `live_bytes` at replay position `event` (pass two replays up to it).
  void reach(uint64_t live_bytes, uint64_t event) {
    if (live_bytes > interval_heap_max_) {
      interval_heap_max_ = live_bytes;
      interval_heap_event_ = event;
    }
  }
  // A point at t_s. Its heap is the highest since the previous point, not only the heap
  // now: a peak between two RSS samples still shows.
  void add_point(double t_s, uint64_t heap_now, uint64_t rss_bytes, uint64_t tracer_bytes, int stage, uint64_t event) {
    points_.push_back(TimelinePoint{t_s, std::max(interval_heap_max_, heap_now), rss_bytes, tracer_bytes, stage});
    heap_events_.push_back(heap_now >= interval_heap_max_ ? event : interval_heap_event_);
    interval_heap_max_ = heap_now;
    interval_heap_event_ = event;
  }

  const std::vector<TimelinePoint>& points() const { return points_; }
  // Per point: the event that reached its heap (where this process stood at the job's
  // peak, when that point is the job's).
  const std::vector<uint64_t>& heap_events() const { return heap_events_; }

  // The report's timeline: at most max_points (each bucket keeps its highest heap and
  // RSS), with a point at the run's heap peak.
  std::vector<TimelinePoint> report(size_t max_points, double peak_heap_time_s, uint64_t peak_heap_bytes) const;

 private:
  std::vector<TimelinePoint> points_;
  std::vector<uint64_t> heap_events_;
  uint64_t interval_heap_max_ = 0;
  uint64_t interval_heap_event_ = 0;
};

}  // namespace memstage::reports
