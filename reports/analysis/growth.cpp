#include "reports/analysis/growth.h"

#include <algorithm>

namespace memstage::reports {
namespace {

struct LineFit {
  double slope = 0;
  double r_squared = 0;
};

// Least squares of y on t over [first, last).
LineFit fit_line(std::span<const double> t, std::span<const uint64_t> y, size_t first, size_t last) {
  const double n = static_cast<double>(last - first);
  double t_mean = 0, y_mean = 0;
  for (size_t i = first; i < last; ++i) {
    t_mean += t[i];
    y_mean += static_cast<double>(y[i]);
  }
  t_mean /= n;
  y_mean /= n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = first; i < last; ++i) {
    const double dt = t[i] - t_mean, dy = static_cast<double>(y[i]) - y_mean;
    sxx += dt * dt;
    sxy += dt * dy;
    syy += dy * dy;
  }
  LineFit f;
  if (sxx <= 0) return f;
  f.slope = sxy / sxx;
  f.r_squared = syy > 0 ? sxy * sxy / (sxx * syy) : 0;
  return f;
}

}  // namespace

GrowthFit fit_growth(std::span<const double> t_s, std::span<const uint64_t> live_bytes, const GrowthOptions& options) {
  GrowthFit fit;
  const size_t n = std::min(t_s.size(), live_bytes.size());
  if (n == 0 || live_bytes[n - 1] == 0) return fit;
  // The window: since the series last held nothing. Memory given back in full before
  // that is not part of any growth still going on.
  size_t w = n;
  while (w > 0 && live_bytes[w - 1] != 0) --w;
  fit.window_start = w;
  const size_t points = n - w;
  if (points < std::max<size_t>(options.min_points, 4)) return fit;

  const LineFit whole = fit_line(t_s, live_bytes, w, n);
  fit.bytes_per_s = whole.slope;
  fit.r_squared = whole.r_squared;
  const double rise = whole.slope * (t_s[n - 1] - t_s[w]);
  if (whole.slope <= 0 || rise <= 0) return fit;

  const size_t segments = std::clamp<size_t>(options.segments, 2, points);
  std::vector<double> means(segments, 0);
  for (size_t j = 0; j < segments; ++j) {
    const size_t first = w + points * j / segments, last = w + points * (j + 1) / segments;
    for (size_t i = first; i < last; ++i) means[j] += static_cast<double>(live_bytes[i]);
    means[j] /= static_cast<double>(last - first);
  }
  const double segment_rise = means.back() - means.front();
  double max_step = 0;
  for (size_t j = 0; j + 1 < segments; ++j) max_step = std::max(max_step, means[j + 1] - means[j]);
  fit.max_step_share = segment_rise > 0 ? max_step / segment_rise : 1.0;
  const LineFit late = fit_line(t_s, live_bytes, w + points / 2, n);
  fit.late_slope_share = late.slope / whole.slope;

  fit.steady = rise >= static_cast<double>(options.min_growth_bytes) && fit.r_squared >= options.min_r_squared &&
               fit.max_step_share <= options.max_step_share && fit.late_slope_share >= options.min_late_slope_share;
  return fit;
}

GrowthAggregator::GrowthAggregator(GrowthOptions options)
    : options_(options), interval_s_(options.initial_interval_s > 0 ? options.initial_interval_s : 1.0) {
  options_.max_snapshots = std::max<size_t>(options_.max_snapshots, 4);
}

void GrowthAggregator::begin_snapshot(double t_s) {
  ++serial_;
  if (!times_.empty()) t_s = std::max(t_s, times_.back());
  // The last snapshot held came less than an interval after the one before it (a feeder
  // that snapshots more often than the spacing, or the run's end): this one replaces it,
  // so that the latest values are always held and the spacing stays even.
  const size_t n = times_.size();
  if (n >= 2 && times_[n - 1] - times_[n - 2] < interval_s_) {
    times_.back() = t_s;
    return;
  }
  if (n == options_.max_snapshots) thin();
  times_.push_back(t_s);
}

void GrowthAggregator::set(uint32_t stack, uint64_t live_bytes) {
  if (times_.empty()) begin_snapshot(0);
  const auto current = static_cast<uint32_t>(times_.size() - 1);
  if (stack >= series_of_stack_.size()) series_of_stack_.grow_to(stack + 1, kNoSeries);
  uint32_t& index = series_of_stack_[stack];
  if (index == kNoSeries) {
    // Nothing held, as before it was first set: no change to record. Most stacks only
    // come and go between two snapshots, and a series each would be most of the tables.
    if (live_bytes == 0) return;
    index = static_cast<uint32_t>(series_.size());
    series_.push_back(Series{{}, 0, stack});
  }
  Series& s = series_[index];
  s.set_in = serial_;
  auto& changes = s.changes;
  if (!changes.empty() && changes.back().snapshot == current) {
    changes.back().live_bytes = live_bytes;
    // A replaced snapshot may bring the value back to what it was before.
    if (changes.size() >= 2 && changes[changes.size() - 2].live_bytes == live_bytes) changes.pop_back();
    return;
  }
  const uint64_t previous = changes.empty() ? 0 : changes.back().live_bytes;
  if (live_bytes != previous) changes.push_back(Change{current, live_bytes});
}

void GrowthAggregator::snapshot(double t_s, std::span<const StackLiveBytes> holding) {
  begin_snapshot(t_s);
  for (const StackLiveBytes& h : holding) set(h.stack, h.live_bytes);
  for (size_t i = 0; i < series_.size(); ++i) {  // set() of a stack that has a series adds none
    const Series& s = series_[i];
    if (s.set_in != serial_ && !s.changes.empty() && s.changes.back().live_bytes != 0) set(s.stack, 0);
  }
}

// Keeps every other snapshot (the even ones) and the last, and doubles the spacing. A
// value set at a dropped snapshot holds from the next one kept.
void GrowthAggregator::thin() {
  const size_t n = times_.size();
  std::vector<double> kept;
  kept.reserve(n / 2 + 1);
  for (size_t i = 0; i < n; i += 2) kept.push_back(times_[i]);
  if ((n - 1) % 2 == 1) kept.push_back(times_[n - 1]);
  times_ = std::move(kept);
  for (size_t i = 0; i < series_.size(); ++i) {
    Series& s = series_[i];
    std::vector<Change> changes;
    changes.reserve(s.changes.size());
    for (const Change& c : s.changes) {
      const uint32_t index = (c.snapshot + 1) / 2;
      if (!changes.empty() && changes.back().snapshot == index) changes.pop_back();
      const uint64_t previous = changes.empty() ? 0 : changes.back().live_bytes;
      if (c.live_bytes != previous) changes.push_back(Change{index, c.live_bytes});
    }
    s.changes = std::move(changes);
  }
  interval_s_ *= 2;
}

std::vector<uint64_t> GrowthAggregator::dense(const Series& s) const {
  std::vector<uint64_t> values(times_.size(), 0);
  for (size_t i = 0; i < s.changes.size(); ++i) {
    const size_t end = i + 1 < s.changes.size() ? s.changes[i + 1].snapshot : times_.size();
    std::fill(values.begin() + s.changes[i].snapshot, values.begin() + static_cast<ptrdiff_t>(end),
              s.changes[i].live_bytes);
  }
  return values;
}

void GrowthAggregator::finish() {
  found_ = growing();
  series_ = {};
  series_of_stack_ = {};
}

std::vector<GrowingStack> GrowthAggregator::growing() const {
  if (found_) return *found_;
  std::vector<GrowingStack> out;
  // A series that changed fewer than three times (allocated once, a burst, never
  // holding memory at a snapshot: most stacks) is no ramp; it is skipped without being
  // expanded.
  constexpr size_t min_changes = 3;
  for (size_t i = 0; i < series_.size(); ++i) {
    const Series& s = series_[i];
    if (s.changes.size() < min_changes || s.changes.back().live_bytes == 0) continue;
    const std::vector<uint64_t> values = dense(s);
    const GrowthFit fit = fit_growth(times_, values, options_);
    if (!fit.steady) continue;
    GrowingStack g;
    g.stack = s.stack;
    g.bytes_per_s = fit.bytes_per_s;
    g.live_bytes = values.back();
    g.since_s = times_[fit.window_start];
    g.r_squared = fit.r_squared;
    g.series.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) g.series.push_back(GrowthPoint{times_[i], values[i]});
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [](const GrowingStack& a, const GrowingStack& b) {
    return a.bytes_per_s != b.bytes_per_s ? a.bytes_per_s > b.bytes_per_s : a.stack < b.stack;
  });
  if (out.size() > options_.max_stacks) out.resize(options_.max_stacks);
  return out;
}

}  // namespace memstage::reports
