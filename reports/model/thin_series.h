// The one way a series over time is thinned for a report or a page (the run's timeline,
// the job's, the device's): cut into spans of equal time, each keeping its extremes, so
// that no peak disappears however few points are kept.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

// Indices of the points to keep, ascending, from `count` points in time order
// (`time_s(i)`): the time from the first to the last cut into `buckets` equal spans, each
// keeping, for every `prefer`, the point it prefers (`prefer(i, j)`: i over j; the first of
// equals). At most buckets × the number of preferences; an empty span keeps nothing.
template <class TimeOf, class... Prefer>
std::vector<size_t> thin_series(size_t count, size_t buckets, TimeOf time_s, Prefer... prefer) {
  std::vector<size_t> keep;
  if (count == 0) return keep;
  const double t0 = time_s(0), t1 = time_s(count - 1);
  size_t i = 0;
  for (size_t b = 0; b < buckets && i < count; ++b) {
    const double end = t0 + (t1 - t0) * static_cast<double>(b + 1) / static_cast<double>(buckets);
    const size_t first = i;
    size_t best[] = {(static_cast<void>(prefer), first)...};
    // The last span takes every point left, whatever rounding did to its end.
    for (; i < count && (time_s(i) <= end || b + 1 == buckets); ++i) {
      size_t k = 0;
      ((best[k] = prefer(i, best[k]) ? i : best[k], ++k), ...);
    }
    if (i == first) continue;
    std::sort(std::begin(best), std::end(best));
    for (size_t chosen : best) {
      if (keep.empty() || keep.back() != chosen) keep.push_back(chosen);
    }
  }
  return keep;
}

// The points of `points` at `keep`'s indices.
template <class Point>
std::vector<Point> points_at(const std::vector<Point>& points, const std::vector<size_t>& keep) {
  std::vector<Point> out;
  out.reserve(keep.size());
  for (size_t i : keep) out.push_back(points[i]);
  return out;
}

// The run's heap and RSS over time, at most max_points: each span keeps its highest heap
// and RSS. The analysis thins it so; the page again for a report made otherwise.
inline std::vector<TimelinePoint> thin_timeline(const std::vector<TimelinePoint>& points, size_t max_points) {
  if (points.size() <= max_points) return points;
  const auto keep = thin_series(
      points.size(), max_points / 2, [&](size_t i) { return points[i].t_s; },
      [&](size_t i, size_t j) { return points[i].heap_bytes > points[j].heap_bytes; },
      [&](size_t i, size_t j) { return points[i].rss_bytes > points[j].rss_bytes; });
  return points_at(points, keep);
}

}  // namespace memstage::reports
