// The job's clock (reports/analysis/job_clock.h) on hand-made series whose sums are known.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "reports/analysis/job_clock.h"

using namespace memstage::reports;

TEST_CASE("heap: each process counts at its interval's highest, and the peak needs them at once") {
  // A: 10 until 1 s, 50 in (1, 2], 0 after. B starts at 1.5 s: 30 in (1.5, 2.5], 5 after.
  std::vector<Series> heap = {
      {0.0, {{1.0, 10}, {2.0, 50}, {3.0, 0}}},
      {1.5, {{2.5, 30}, {4.0, 5}}},
  };
  std::vector<Sample> sums;
  const JobPeak peak = highest_sum(heap, Hold::kIntervalEndingAt, &sums);
  CHECK(peak.bytes == 80);
  CHECK(peak.t_s == 2.0);
  CHECK(peak.sample_at_peak == std::vector<int64_t>{1, 0});
  CHECK(value_at(heap[1], 1.0, Hold::kIntervalEndingAt) == 0);  // not started
  CHECK(value_at(heap[1], 3.0, Hold::kIntervalEndingAt) == 5);
  CHECK(value_at(heap[0], 3.5, Hold::kIntervalEndingAt) == 0);  // ended
}

TEST_CASE("heap: processes that never overlap do not add up") {
  std::vector<Series> heap = {
      {0.0, {{1.0, 100}}},
      {2.0, {{3.0, 70}}},
  };
  const JobPeak peak = highest_sum(heap, Hold::kIntervalEndingAt);
  CHECK(peak.bytes == 100);
  CHECK(peak.sample_at_peak == std::vector<int64_t>{0, -1});
}

TEST_CASE("RSS: a sample holds until the next, a process counts until its last") {
  std::vector<Series> rss = {
      {0.0, {{0.0, 10}, {1.0, 40}, {3.0, 20}}},
      {0.5, {{0.5, 7}, {2.0, 9}}},
  };
  const JobPeak peak = highest_sum(rss, Hold::kUntilNext);
  CHECK(peak.bytes == 49);
  CHECK(peak.t_s == 2.0);
  CHECK(value_at(rss[0], 2.9, Hold::kUntilNext) == 40);
  CHECK(value_at(rss[1], 2.5, Hold::kUntilNext) == 0);
}

TEST_CASE("the job's timeline keeps the peak and adds up per instant") {
  std::vector<Series> heap, rss;
  for (int p = 0; p < 3; ++p) {
    Series s{0.01 * p, {}};
    for (int i = 1; i <= 1000; ++i) s.samples.push_back({0.01 * p + 0.001 * i, static_cast<uint64_t>(i == 500 + p ? 1000 : i)});
    heap.push_back(s);
    rss.push_back(s);
  }
  std::vector<Sample> sums;
  const JobPeak peak = highest_sum(heap, Hold::kIntervalEndingAt, &sums);
  const auto timeline = job_timeline(heap, rss, sums, peak, 100);
  CHECK(timeline.size() <= 102);
  bool has_peak = false;
  for (const auto& p : timeline) {
    uint64_t sum = 0;
    for (uint64_t b : p.process_heap_bytes) sum += b;
    CHECK(sum == p.heap_bytes);
    has_peak |= p.heap_bytes == peak.bytes && p.t_s == peak.t_s;
  }
  CHECK(has_peak);
}
