// The job's clock: per-process series of memory figures merged into sums over the
// processes alive at the same instant (report_model.h JobReport). Knows nothing of traces:
// the analyzer hands it each process's series already on the job's clock.
#pragma once

#include <cstdint>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

struct Sample {
  double t_s = 0;
  uint64_t bytes = 0;
};

// How a process's samples hold between them.
enum class Hold {
  // A sample is the highest value in the interval that ends at it (since the process's
  // previous sample, or its start): the live heap, whose every change the trace sees.
  kIntervalEndingAt,
  // A sample holds until the next one: RSS and PSS, read from the kernel now and then.
  kUntilNext,
};

// One process's figure over time. It counts from start_s to its last sample, 0 outside.
struct Series {
  double start_s = 0;
  std::vector<Sample> samples;  // by time
};

struct JobPeak {
  uint64_t bytes = 0;
  double t_s = 0;
  // Per series: the index of its sample that counted at the peak, -1 when it did not.
  std::vector<int64_t> sample_at_peak;
};

// The highest sum over the series at one instant. `sums`, when given, receives the sum at
// every instant where one of the series has a sample.
JobPeak highest_sum(const std::vector<Series>& series, Hold hold, std::vector<Sample>* sums = nullptr);

// The series' value at t (0 before its start and after its last sample).
uint64_t value_at(const Series& series, double t_s, Hold hold);

// At most about max_points instants of the heap sums, keeping each time bucket's highest
// and the peak, with each process's heap and the RSS sum at that instant.
std::vector<JobTimelinePoint> job_timeline(const std::vector<Series>& heap, const std::vector<Series>& rss,
                                           const std::vector<Sample>& heap_sums, const JobPeak& heap_peak,
                                           size_t max_points);

}  // namespace memstage::reports
