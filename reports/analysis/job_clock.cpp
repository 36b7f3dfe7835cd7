#include "reports/analysis/job_clock.h"

#include <algorithm>

#include "reports/model/thin_series.h"

namespace memstage::reports {

JobPeak highest_sum(const std::vector<Series>& series, Hold hold, std::vector<Sample>* sums) {
  // Events in time order: a process starting, then each of its samples. At equal times a
  // start comes first, so that every process alive at an instant counts in it.
  struct Event {
    double t_s;
    uint32_t series;
    int64_t sample;  // -1: the start
  };
  std::vector<Event> events;
  size_t total = 0;
  for (const Series& s : series) total += s.samples.size() + 1;
  events.reserve(total);
  for (uint32_t i = 0; i < series.size(); ++i) {
    if (series[i].samples.empty()) continue;
    events.push_back(Event{series[i].start_s, i, -1});
    for (size_t k = 0; k < series[i].samples.size(); ++k) {
      events.push_back(Event{series[i].samples[k].t_s, i, static_cast<int64_t>(k)});
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.t_s != b.t_s) return a.t_s < b.t_s;
    return (a.sample < 0) > (b.sample < 0);
  });

  std::vector<int64_t> current(series.size(), -1);  // the sample each series counts now
  uint64_t sum = 0;
  const auto set = [&](uint32_t i, int64_t sample) {
    if (current[i] >= 0) sum -= series[i].samples[current[i]].bytes;
    current[i] = sample >= 0 && static_cast<size_t>(sample) < series[i].samples.size() ? sample : -1;
    if (current[i] >= 0) sum += series[i].samples[current[i]].bytes;
  };

  JobPeak peak;
  peak.sample_at_peak.assign(series.size(), -1);
  bool any = false;
  const auto evaluate = [&](double t_s) {
    if (sums) sums->push_back(Sample{t_s, sum});
    if (!any || sum > peak.bytes) {
      any = true;
      peak.bytes = sum;
      peak.t_s = t_s;
      peak.sample_at_peak = current;
    }
  };
  for (const Event& e : events) {
    if (hold == Hold::kIntervalEndingAt) {
      // From its start a process counts at the sample that closes the current interval;
      // once that sample's instant passes, the next one.
      if (e.sample < 0) {
        set(e.series, 0);
        continue;
      }
      evaluate(e.t_s);
      set(e.series, e.sample + 1);
    } else {
      if (e.sample < 0) continue;
      set(e.series, e.sample);
      evaluate(e.t_s);
      if (static_cast<size_t>(e.sample) + 1 == series[e.series].samples.size()) set(e.series, -1);
    }
  }
  return peak;
}

uint64_t value_at(const Series& series, double t_s, Hold hold) {
  const auto& s = series.samples;
  if (s.empty() || t_s < series.start_s || t_s > s.back().t_s) return 0;
  if (hold == Hold::kIntervalEndingAt) {
    auto it = std::lower_bound(s.begin(), s.end(), t_s, [](const Sample& a, double t) { return a.t_s < t; });
    return it == s.end() ? 0 : it->bytes;
  }
  auto it = std::upper_bound(s.begin(), s.end(), t_s, [](double t, const Sample& a) { return t < a.t_s; });
  return it == s.begin() ? 0 : std::prev(it)->bytes;
}

std::vector<JobTimelinePoint> job_timeline(const std::vector<Series>& heap, const std::vector<Series>& rss,
                                           const std::vector<Sample>& heap_sums, const JobPeak& heap_peak,
                                           size_t max_points) {
  std::vector<double> instants;
  if (!heap_sums.empty()) {
    // Each span's low and high both, in time order, so that the shape survives.
    const auto keep = thin_series(
        heap_sums.size(), std::max<size_t>(1, max_points / 2), [&](size_t i) { return heap_sums[i].t_s; },
        [&](size_t i, size_t j) { return heap_sums[i].bytes > heap_sums[j].bytes; },
        [&](size_t i, size_t j) { return heap_sums[i].bytes < heap_sums[j].bytes; });
    for (size_t i : keep) instants.push_back(heap_sums[i].t_s);
    instants.push_back(heap_peak.t_s);
    std::sort(instants.begin(), instants.end());
    instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  }
  std::vector<JobTimelinePoint> out;
  out.reserve(instants.size());
  for (double t : instants) {
    JobTimelinePoint p;
    p.t_s = t;
    p.process_heap_bytes.reserve(heap.size());
    for (const Series& s : heap) {
      p.process_heap_bytes.push_back(value_at(s, t, Hold::kIntervalEndingAt));
      p.heap_bytes += p.process_heap_bytes.back();
    }
    for (const Series& s : rss) p.rss_bytes += value_at(s, t, Hold::kUntilNext);
    out.push_back(std::move(p));
  }
  // At the peak instant the sweep and value_at may differ where several processes have a
  // sample at that very instant: the point shows the peak the report states.
  for (JobTimelinePoint& p : out) {
    if (p.t_s == heap_peak.t_s && p.heap_bytes < heap_peak.bytes) {
      for (size_t i = 0; i < heap.size(); ++i) {
        const int64_t k = heap_peak.sample_at_peak[i];
        p.process_heap_bytes[i] = k >= 0 ? heap[i].samples[k].bytes : 0;
      }
      p.heap_bytes = heap_peak.bytes;
    }
  }
  return out;
}

}  // namespace memstage::reports
