// Growth over time: which stacks' live bytes grow steadily over a run, and how fast.
//
// Fed by snapshots of live bytes per stack (full mode derives them from its events while
// replaying, see StackLiveBytes below; the aggregated modes read them from their capture),
// it fits each stack's series and tells steady growth (a leak in a program that never
// exits) from a constant buffer, a one-off burst, a cache that filled up, or churn.
//
// Memory is bounded whatever the run's length: at most `max_snapshots` snapshots are held;
// when one more would pass that, every other one is dropped and the spacing doubles. Each
// stack keeps only the snapshots at which its live bytes changed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "profiler/trace/block_vector.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

struct GrowthOptions {
  // Snapshots held at once (128 to 256 after the first thinning): enough points for a fit
  // whose slope is within a few percent on a steady series, few enough that the page's
  // charts and the analysis's memory stay small for any run length.
  size_t max_snapshots = 256;
  // The spacing a feeder that chooses its moments (full mode) starts with; it doubles at
  // each thinning. Full mode's snapshots cost nothing to take, so it starts fine and a
  // run of a few seconds still gets a hundred points; the aggregated modes write theirs
  // every --snapshot-interval and feed them as they come.
  double initial_interval_s = 1.0;
  size_t max_stacks = 20;  // growing stacks listed, fastest first

  // The criteria of steady growth, over the stack's window: the snapshots since it last
  // held nothing (its memory since then has never all been given back).
  // Fewer points cannot tell a ramp from two or three bursts.
  size_t min_points = 8;
  // The line explains most of the variation: one step (a buffer allocated at some moment
  // and kept) explains at most 3/4 of it (R² of a step against a line is 3p(1-p), at
  // most 0.75 for a step at p of the window), churn around a level next to nothing. 0.8
  // still takes a steady growth with noise of 10 % of its rise (R² ≈ 0.89).
  double min_r_squared = 0.8;
  // The window cut in `segments` of as many snapshots; between the means of two
  // neighbouring ones, at most this share of the rise from the first to the last. A
  // steady line gives 1/7 each, a single burst at least 1/2 (it falls in one segment, or
  // is split between two), two bursts 1/4 to 1/2; means rather than single intervals, so
  // that noise around a steady line does not read as a burst.
  size_t segments = 8;
  double max_step_share = 0.3;
  // The growth goes on to the end: the slope over the window's second half is at least
  // this share of the whole window's. A cache that filled up and stays full, or a burst
  // of loading early on, flattens in the second half.
  double min_late_slope_share = 1.0 / 3.0;
  // Growth smaller than this over the window is not listed: interpreters and runtimes
  // grow small caches slowly, and no leak hunt starts from a few kilobytes.
  uint64_t min_growth_bytes = 16 << 10;
};

struct StackLiveBytes {
  uint32_t stack = 0;
  uint64_t live_bytes = 0;
};

class GrowthAggregator {
 public:
  explicit GrowthAggregator(GrowthOptions options = {});

  // For a feeder that chooses its moments: the spacing of the snapshots held, and whether
  // a snapshot is due at t_s (the first always is).
  double interval_s() const { return interval_s_; }
  bool due(double t_s) const { return times_.empty() || t_s >= times_.back() + interval_s_; }

  // Opens a snapshot at t_s (seconds since the process started, never decreasing).
  void begin_snapshot(double t_s);
  // The live bytes of `stack` at the open snapshot. A stack not set keeps its last value
  // (nothing before it was first set): feed only the stacks that changed.
  void set(uint32_t stack, uint64_t live_bytes);
  // A whole snapshot: `holding` lists every stack holding memory at t_s; any other holds
  // nothing then (a capture that lists only the stacks holding memory).
  void snapshot(double t_s, std::span<const StackLiveBytes> holding);

  size_t snapshots() const { return times_.size(); }
  // The stacks with a series: those that have held memory at a snapshot.
  size_t stacks_held() const { return series_.size(); }
  const std::vector<double>& times_s() const { return times_; }

  // The stacks that grow steadily, fastest first, at most max_stacks. Stack ids are the
  // feeder's (the caller maps them into the report); series holds the stack's live bytes
  // at every snapshot held.
  std::vector<GrowingStack> growing() const;
  // No more snapshots come: the growing stacks are fitted now and the series let go (a
  // torch import's trace holds 7e5 of them, tens of MB the rest of the analysis has no use for).
  void finish();
  // Fills the report's growth: the growing stacks with `index_of(stack id)` as their stack.
  template <typename IndexOf>
  GrowthReport report(IndexOf index_of) const {
    GrowthReport r;
    r.interval_s = interval_s_;
    r.snapshots = times_.size();
    r.stacks = growing();
    for (GrowingStack& g : r.stacks) g.stack = index_of(g.stack);
    return r;
  }

 private:
  struct Change {
    uint32_t snapshot;  // index into times_
    uint64_t live_bytes;
  };
  struct Series {
    std::vector<Change> changes;  // in snapshot order; the value holds until the next change
    uint64_t set_in = 0;  // serial of the last snapshot that set it (whole snapshots)
    uint32_t stack = 0;
  };
  void thin();
  std::vector<uint64_t> dense(const Series& s) const;

  GrowthOptions options_;
  double interval_s_;
  uint64_t serial_ = 0;  // snapshots begun, replaced ones included
  std::vector<double> times_;
  // Each stack's series, found by stack id in a table of indices: the ids are the trace's,
  // numbered from 0, and a hash table of the series missed the cache on every set
  // (docs/performance.md).
  static constexpr uint32_t kNoSeries = UINT32_MAX;
  trace::BlockVector<uint32_t> series_of_stack_;
  // In blocks: a doubling vector of 7e5 series held its old copy and the new at once.
  trace::BlockVector<Series> series_;
  std::optional<std::vector<GrowingStack>> found_;  // once finished
};

// The fit of one series, exposed for the tests of the criteria.
struct GrowthFit {
  bool steady = false;
  size_t window_start = 0;  // first index of the window (since the series last held 0)
  double bytes_per_s = 0;   // least-squares slope over the window
  double r_squared = 0;
  double max_step_share = 0;  // the largest rise between neighbouring segments' means
  double late_slope_share = 0;
};
GrowthFit fit_growth(std::span<const double> t_s, std::span<const uint64_t> live_bytes,
                     const GrowthOptions& options);

// Full mode: live bytes per stack as the events replay, and the stacks changed since the
// last snapshot, so that a snapshot costs what changed, not every stack.
class StackLiveBytesReplay {
 public:
  // Inline, on every event of the replay; the tables grow out of line.
  void add(uint32_t stack, int64_t bytes) {
    if (__builtin_expect(stack >= live_.size(), 0)) grow_to(stack);
    live_[stack] = static_cast<uint64_t>(static_cast<int64_t>(live_[stack]) + bytes);
    if (!dirty_flag_[stack]) mark_dirty(stack);
  }
  // Fetches the stack's entries ahead of an add (a cache miss each in a run's tables).
  void prefetch(uint32_t stack) const {
    if (stack >= live_.size()) return;
    __builtin_prefetch(&live_[stack]);
    __builtin_prefetch(&dirty_flag_[stack]);
  }
  // Takes a snapshot at t_s if one is due.
  void tick(double t_s, GrowthAggregator& growth) {
    if (growth.due(t_s)) flush(t_s, growth);
  }
  // A snapshot at t_s of the stacks changed since the last one.
  void flush(double t_s, GrowthAggregator& growth) {
    growth.begin_snapshot(t_s);
    for (uint32_t stack : dirty_) {
      growth.set(stack, live_[stack]);
      dirty_flag_[stack] = false;
    }
    dirty_.clear();
  }

 private:
  [[gnu::noinline]] void mark_dirty(uint32_t stack) {
    dirty_flag_[stack] = 1;
    dirty_.push_back(stack);
  }
  [[gnu::noinline]] void grow_to(uint32_t stack) {
    live_.grow_to(size_t{stack} + 1, 0);
    dirty_flag_.grow_to(size_t{stack} + 1, 0);
  }

  // Per stack id, in blocks: as doubling lists they were pass one's largest, held twice
  // over while they grew (the ids are every node of the tree).
  trace::BlockVector<uint64_t> live_;
  trace::BlockVector<uint8_t> dirty_flag_;
  std::vector<uint32_t> dirty_;
};

}  // namespace memstage::reports
