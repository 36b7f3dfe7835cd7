#include "reports/analysis/job_plan.h"

#include <algorithm>

#include "reports/analysis/job_clock.h"

namespace memstage::reports {

namespace {

// The widest of a process's intervals: its sampling interval, or, in aggregate mode, whose
// ticks space out as the run ages (profiler/preload/samplers.h), its widest gap between records.
double clock_resolution_s(const FirstPass& p) {
  double widest_s = p.info.sample_interval_ns / kNsPerS;
  if (!p.aggregate_mode()) return widest_s;
  const std::vector<TimelinePoint>& points = p.timeline.points();
  for (size_t i = 1; i < points.size(); ++i) widest_s = std::max(widest_s, points[i].t_s - points[i - 1].t_s);
  return widest_s;
}

// A process's PSS and USS (its private bytes) over the job's time, from its samples of
// /proc/PID/smaps_rollup; empty without samples.
struct ShareSeries {
  Series pss, uss;
  std::optional<uint64_t> peak_pss_bytes, peak_uss_bytes;
};

ShareSeries share_series(const FirstPass& p, double offset_s) {
  ShareSeries out{{offset_s, {}}, {offset_s, {}}, std::nullopt, std::nullopt};
  for (const trace::MemorySharesRecord& s : p.shares) {
    out.pss.samples.push_back(Sample{offset_s + s.t_ns / kNsPerS, s.pss_bytes});
    out.uss.samples.push_back(Sample{offset_s + s.t_ns / kNsPerS, s.private_bytes});
    out.peak_pss_bytes = std::max(out.peak_pss_bytes.value_or(0), s.pss_bytes);
    out.peak_uss_bytes = std::max(out.peak_uss_bytes.value_or(0), s.private_bytes);
  }
  // A process's PSS holds until its end, not only until its last (sparse) sample.
  const double end_s = offset_s + p.now_ns / kNsPerS;
  if (!out.pss.samples.empty() && end_s > out.pss.samples.back().t_s) {
    out.pss.samples.push_back(Sample{end_s, out.pss.samples.back().bytes});
    out.uss.samples.push_back(Sample{end_s, out.uss.samples.back().bytes});
  }
  return out;
}

}  // namespace

JobPlan plan_job(const std::vector<std::unique_ptr<TraceFile>>& files, size_t main_index, size_t max_points) {
  JobPlan plan;
  plan.order.push_back(main_index);
  for (size_t i = 0; i < files.size(); ++i) {
    if (i != main_index) plan.order.push_back(i);
  }
  uint64_t zero_ns = UINT64_MAX;
  for (const auto& f : files) zero_ns = std::min(zero_ns, f->pass.info.start_realtime_ns);
  std::vector<Series> heap, rss, pss, uss;
  bool any_shares = false;
  for (size_t i : plan.order) {
    const FirstPass& p = files[i]->pass;
    const double offset_s = static_cast<double>(p.info.start_realtime_ns - zero_ns) / kNsPerS;
    Series h{offset_s, {}}, r{offset_s, {}};
    h.samples.reserve(p.timeline.points().size());
    r.samples.reserve(p.timeline.points().size());
    for (const TimelinePoint& point : p.timeline.points()) {
      h.samples.push_back(Sample{offset_s + point.t_s, point.heap_bytes});
      r.samples.push_back(Sample{offset_s + point.t_s, point.rss_bytes});
    }
    plan.start_s.push_back(offset_s);
    plan.end_s.push_back(offset_s + p.now_ns / kNsPerS);
    plan.job.clock_resolution_s = std::max(plan.job.clock_resolution_s, clock_resolution_s(p));
    heap.push_back(std::move(h));
    rss.push_back(std::move(r));
    ShareSeries shares = share_series(p, offset_s);
    any_shares = any_shares || !shares.pss.samples.empty();
    plan.peak_pss_bytes.push_back(shares.peak_pss_bytes);
    plan.peak_uss_bytes.push_back(shares.peak_uss_bytes);
    pss.push_back(std::move(shares.pss));
    uss.push_back(std::move(shares.uss));
  }
  std::vector<Sample> heap_sums;
  const JobPeak heap_peak = highest_sum(heap, Hold::kIntervalEndingAt, &heap_sums);
  const JobPeak rss_peak = highest_sum(rss, Hold::kUntilNext);
  plan.job.peak_heap_bytes = heap_peak.bytes;
  plan.job.peak_heap_time_s = heap_peak.t_s;
  plan.job.peak_rss_bytes = rss_peak.bytes;
  plan.job.peak_rss_time_s = rss_peak.t_s;
  if (any_shares) {
    const JobPeak pss_peak = highest_sum(pss, Hold::kUntilNext);
    plan.job.peak_pss_bytes = pss_peak.bytes;
    plan.job.peak_pss_time_s = pss_peak.t_s;
    plan.job.peak_uss_bytes = highest_sum(uss, Hold::kUntilNext).bytes;
    // A quarter more than PSS: beyond what the sparser PSS samples can miss.
    plan.job.rss_overstates = 4 * plan.job.peak_rss_bytes > 5 * pss_peak.bytes;
  }
  for (size_t n = 0; n < plan.order.size(); ++n) {
    const int64_t k = heap_peak.sample_at_peak[n];
    const FirstPass& p = files[plan.order[n]]->pass;
    plan.heap_at_peak_bytes.push_back(k >= 0 ? heap[n].samples[k].bytes : 0);
    plan.event_at_peak.push_back(k >= 0 && p.info.mode == trace::Mode::kFull ? p.timeline.heap_events()[k] : 0);
  }
  // One process: its own timeline is the job's.
  if (files.size() > 1) {
    // Each point holds every process's heap: a job of thousands of short processes gets
    // fewer points, so that the timeline stays within kMaxJobTimelineValues figures.
    const size_t points = std::min(max_points, std::max(kMaxJobTimelineValues / files.size(), kMinJobTimelinePoints));
    plan.job.timeline = job_timeline(heap, rss, heap_sums, heap_peak, points);
    if (any_shares) {
      for (JobTimelinePoint& point : plan.job.timeline) {
        point.pss_bytes = 0;
        for (const Series& s : pss) *point.pss_bytes += value_at(s, point.t_s, Hold::kUntilNext);
      }
    }
  }
  return plan;
}

}  // namespace memstage::reports
