// thin_series: the one thinning of a series over time (reports/model/thin_series.h).
#include "reports/model/thin_series.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace memstage::reports;

namespace {

struct Point {
  double t_s;
  uint64_t bytes;
};

std::vector<size_t> thin_high_low(const std::vector<Point>& points, size_t buckets) {
  return thin_series(
      points.size(), buckets, [&](size_t i) { return points[i].t_s; },
      [&](size_t i, size_t j) { return points[i].bytes > points[j].bytes; },
      [&](size_t i, size_t j) { return points[i].bytes < points[j].bytes; });
}

}  // namespace

TEST_CASE("thin_series keeps each span's extremes in time order", "[thin]") {
  // Two spans of time, [0, 5] and (5, 10]: the first's low at 1, high at 3; the second's
  // high at 6 and low at 9.
  const std::vector<Point> points{{0, 5}, {1, 1}, {2, 4}, {3, 9}, {6, 20}, {7, 10}, {8, 12}, {9, 2}, {10, 3}};
  CHECK(thin_high_low(points, 2) == std::vector<size_t>{1, 3, 4, 7});
}

TEST_CASE("thin_series: the first of equals, one index where a point is both extremes", "[thin]") {
  const std::vector<Point> flat{{0, 7}, {1, 7}, {2, 7}};
  CHECK(thin_high_low(flat, 1) == std::vector<size_t>{0});
}

TEST_CASE("thin_series: empty spans keep nothing, the last span takes what is left", "[thin]") {
  // Ten spans over [0, 100], points only at the ends: the first span and the last keep one each.
  const std::vector<Point> ends{{0, 1}, {100, 2}};
  CHECK(thin_high_low(ends, 10) == std::vector<size_t>{0, 1});
  CHECK(thin_high_low({}, 10).empty());
  CHECK(thin_high_low(ends, 0).empty());
}

TEST_CASE("thin_timeline keeps the heap's and the RSS's peaks within its bound", "[thin]") {
  std::vector<TimelinePoint> points;
  for (int i = 0; i < 10000; ++i) {
    const auto heap = static_cast<uint64_t>(i % 97);
    const auto rss = static_cast<uint64_t>(i % 89);
    points.push_back(TimelinePoint{i * 0.001, heap, rss, 0, -1});
  }
  points[4321].heap_bytes = 1000;
  points[8765].rss_bytes = 2000;
  const auto thin = thin_timeline(points, 100);
  CHECK(thin.size() <= 100);
  CHECK(thin.size() >= 50);
  uint64_t max_heap = 0, max_rss = 0;
  for (size_t i = 0; i < thin.size(); ++i) {
    if (i > 0) CHECK(thin[i - 1].t_s < thin[i].t_s);
    max_heap = std::max(max_heap, thin[i].heap_bytes);
    max_rss = std::max(max_rss, thin[i].rss_bytes);
  }
  CHECK(max_heap == 1000);
  CHECK(max_rss == 2000);
  // Under the bound, every point as it was.
  CHECK(thin_timeline(points, 10000).size() == 10000);
}
