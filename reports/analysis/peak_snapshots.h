// The stacks that held memory at the peaks (the run's, each stage row's, the job's, when
// RSS passed --ram-limit), one aggregator of the analysis (reports/analysis). In full and
// sample modes they come from pass two, which reads the trace again and replays its events
// up to each peak (PeakSnapshots); aggregate mode's tracer records them itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/live_heap.h"
#include "reports/analysis/sites.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

// Which stacks held memory at the peaks: from the events (PeakSnapshots, full mode) or as
// aggregate mode's tracer recorded them (stacks_at_peaks_of_aggregate).
struct StacksAtPeaks {
  static constexpr int kRamLimit = -2;  // a stage_peaks key: when RSS passed --ram-limit
  static constexpr int kJobPeak = -3;   // a stage_peaks key: where this process stood at the job's heap peak
  // At the run's peak: live bytes and blocks per (stack, stage) key (figure_key), sorted
  // by key, so that a stack's keys are neighbours.
  struct KeyedLive {
    uint64_t key = 0;
    uint64_t bytes = 0;
    uint64_t blocks = 0;
  };
  std::vector<KeyedLive> run_peak;
  // An object, not a function: std::sort then inlines the comparison (a call each, through
  // a pointer, was half of a sort's time).
  struct KeyLess {
    bool operator()(const KeyedLive& a, const KeyedLive& b) const { return a.key < b.key; }
  };
  static constexpr KeyLess key_less{};
  // Pass two's replay takes the run's peak as the live blocks of each info that held some,
  // (info, blocks) in info order, a count over UINT32_MAX split over entries in a row:
  // smaller than the list by key, held beside the stack resolution, made into run_peak
  // after it.
  std::vector<std::pair<uint32_t, uint32_t>> run_peak_blocks;
  // run_peak from run_peak_blocks: the infos' figures placed by stack (a count a stack id)
  // and sorted by stage within each, where a hash table by key, read back and sorted, missed
  // the cache at every info. None held (aggregate mode, or no peak): run_peak as it is.
  void count_run_peak(const AllocationInfos& infos) {
    if (run_peak_blocks.empty()) return;
    run_peak = live_by_stack(infos);
    std::vector<std::pair<uint32_t, uint32_t>>().swap(run_peak_blocks);
    sort_and_merge_keys(run_peak);
  }
  // At each stage's peak: live bytes per stack, largest first.
  std::unordered_map<int, std::vector<StackBytes>> stage_peaks;

  // The `top` stacks holding the most bytes at the run's peak, by trace stack, most first
  // (equal bytes by stack): one walk of run_peak, whose keys of a stack are neighbours,
  // where a table of every stack held at the peak was the step's largest.
  std::vector<StackBytes> run_peak_top(size_t top) const {
    TopStacks kept(top);
    for (size_t i = 0; i < run_peak.size();) {
      StackBytes sb;
      sb.stack = stack_of_key(run_peak[i].key);
      for (; i < run_peak.size() && stack_of_key(run_peak[i].key) == sb.stack; ++i) {
        sb.bytes += run_peak[i].bytes;
        sb.blocks += run_peak[i].blocks;
      }
      kept.add(sb);
    }
    return kept.take();
  }

  // Keyed figures grouped by stack (each stack's in any order) sorted by key, equal keys
  // added up.
  static void sort_and_merge_keys(std::vector<KeyedLive>& by_stack) {
    for (size_t begin = 0; begin < by_stack.size();) {
      size_t end = begin + 1;
      while (end < by_stack.size() && stack_of_key(by_stack[end].key) == stack_of_key(by_stack[begin].key)) ++end;
      if (end - begin > 1) std::sort(by_stack.begin() + static_cast<ptrdiff_t>(begin), by_stack.begin() + static_cast<ptrdiff_t>(end), key_less);
      begin = end;
    }
    size_t kept = 0;
    for (size_t i = 0; i < by_stack.size(); ++i) {
      if (kept && by_stack[kept - 1].key == by_stack[i].key) {
        by_stack[kept - 1].bytes += by_stack[i].bytes;
        by_stack[kept - 1].blocks += by_stack[i].blocks;
      } else {
        by_stack[kept++] = by_stack[i];
      }
    }
    by_stack.resize(kept);
  }

  // The `top` stacks of those added, the most bytes first (equal bytes by stack): a heap of
  // the kept, the least first, so that a stack below a full top is passed by and no list of
  // every stack is made.
  class TopStacks {
   public:
    explicit TopStacks(size_t top) : top_(top) {}
    bool would_keep(const StackBytes& sb) const {
      return kept_.size() < top_ || (!kept_.empty() && more(sb, kept_.front()));
    }
    void add(const StackBytes& sb) {
      if (!would_keep(sb)) return;
      kept_.push_back(sb);
      std::push_heap(kept_.begin(), kept_.end(), more);
      if (kept_.size() <= top_) return;
      std::pop_heap(kept_.begin(), kept_.end(), more);
      kept_.pop_back();
    }
    std::vector<StackBytes> take() {
      std::sort(kept_.begin(), kept_.end(), more);
      return std::move(kept_);
    }

   private:
    static bool more(const StackBytes& a, const StackBytes& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
    }
    size_t top_;
    std::vector<StackBytes> kept_;
  };

 private:
  // Each held info's figures, one entry an info (its split counts added up first), placed
  // by stack: a count a stack id, then each in its stack's room, in info order.
  std::vector<KeyedLive> live_by_stack(const AllocationInfos& infos) const {
    uint32_t stacks = 0;
    for (const auto& [id, blocks] : run_peak_blocks) stacks = std::max(stacks, infos[id].stack + 1);
    std::vector<uint32_t> place(size_t{stacks} + 1, 0);
    for (size_t i = 0; i < run_peak_blocks.size(); ++i) {
      if (i == 0 || run_peak_blocks[i].first != run_peak_blocks[i - 1].first) ++place[infos[run_peak_blocks[i].first].stack + 1];
    }
    for (size_t s = 1; s < place.size(); ++s) place[s] += place[s - 1];
    std::vector<KeyedLive> out(place.back());
    for (size_t i = 0; i < run_peak_blocks.size();) {
      const uint32_t id = run_peak_blocks[i].first;
      uint64_t blocks = 0;
      for (; i < run_peak_blocks.size() && run_peak_blocks[i].first == id; ++i) blocks += run_peak_blocks[i].second;
      const AllocationInfo& info = infos[id];
      out[place[info.stack]++] = KeyedLive{figure_key(info.stack, info.stage), blocks * info.size, blocks_counted(info, blocks)};
    }
    return out;
  }
};

// Pass two: replays the events up to each peak and records which stacks held memory.
//
// A snapshot that walks every allocation info costs as much as there are infos; with one
// per stage instance (a loop of 64k stages), that walk made the analysis quadratic. When
// walking would cost more than keeping them, the stacks' live bytes are kept in order as
// the events replay, and a stage's top stacks are read off the front.
class PeakSnapshots : public trace::TraceVisitor, public StacksAtPeaks {
 public:
  struct Target {
    uint64_t event;
    int stage;  // -1: the run's peak; kRamLimit: when RSS passed --ram-limit
  };
  // `infos` and `events`: how many pass one saw, to choose how stage peaks are taken.
  PeakSnapshots(std::vector<Target> targets, uint64_t infos, uint64_t events) : targets_(std::move(targets)) {
    std::sort(targets_.begin(), targets_.end(), [](const Target& a, const Target& b) { return a.event < b.event; });
    uint64_t stage_snapshots = 0;
    for (size_t i = 0; i < targets_.size(); ++i) {
      if (targets_[i].stage >= 0 && (i == 0 || targets_[i].event != targets_[i - 1].event)) ++stage_snapshots;
    }
    // An ordered update costs about as much as walking a few dozen infos.
    constexpr uint64_t kOrderedUpdateCost = 32;
    ordered_ = stage_snapshots * infos > kOrderedUpdateCost * events;
  }

  size_t top_stacks = 20;

  // Every peak is taken: the events after the last one cannot change them.
  bool done() const override { return next_ == targets_.size(); }

  void on_alloc_info(uint32_t id, uint64_t size, uint32_t stack, int32_t stage) override {
    heap_.define(id, allocation_info(size, stack, stage, sample_rate_bytes_));
  }
  // Every info at once, as pass one defined them, for a replay of its EventLog (event_log.h)
  // instead of the trace: infos not defined yet at a peak hold no live block there. Pass
  // one's heap lends them (LiveHeap::borrow_infos) until give_back_infos.
  void borrow_infos(const LiveHeap& pass_one) { heap_.borrow_infos(pass_one); }
  void give_back_infos() { heap_.give_back_infos(); }
  // The replay is over: its live counts go, its snapshots stay.
  void let_go_of_replay() {
    heap_ = LiveHeap();
    std::vector<StackBytes>().swap(stack_live_);
    stacks_by_bytes_.clear();
  }
  void on_sampling(uint64_t rate_bytes) override { sample_rate_bytes_ = rate_bytes; }
  void on_alloc(uint32_t info, bool) override {
    ++events_;
    heap_.allocate(info);
    if (ordered_) update_stack(heap_.info(info), +1);
    take_due_snapshots();
  }
  void on_free(uint32_t info, bool) override {
    ++events_;
    if (heap_.free(info) && ordered_) update_stack(heap_.info(info), -1);
    take_due_snapshots();
  }

 private:
  struct ByBytesDescending {
    bool operator()(const std::pair<uint64_t, uint32_t>& a, const std::pair<uint64_t, uint32_t>& b) const {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    }
  };

  void update_stack(const AllocationInfo& info, int direction) {
    if (info.stack >= stack_live_.size()) stack_live_.resize(info.stack + 1);
    StackBytes& live = stack_live_[info.stack];
    if (live.blocks) stacks_by_bytes_.erase({live.bytes, info.stack});
    if (direction > 0) {
      live.bytes += info.size;
      live.blocks += blocks_counted(info, 1);
    } else {
      live.bytes -= info.size;
      live.blocks -= blocks_counted(info, 1);
    }
    if (live.blocks) stacks_by_bytes_.insert({live.bytes, info.stack});
  }

  void take_due_snapshots() {
    while (next_ < targets_.size() && targets_[next_].event == events_) snapshot(targets_[next_++]);
  }

  void snapshot(const Target& t) {
    const auto& infos = heap_.infos();
    const auto& live = heap_.live_blocks();
    if (t.stage == -1) {
      run_peak_blocks.reserve(static_cast<size_t>(std::count_if(live.begin(), live.end(), [](uint64_t n) { return n; })));
      for (size_t i = 0; i < live.size(); ++i) {
        for (uint64_t left = live[i]; left;) {
          const auto part = static_cast<uint32_t>(std::min<uint64_t>(left, UINT32_MAX));
          run_peak_blocks.emplace_back(static_cast<uint32_t>(i), part);
          left -= part;
        }
      }
      return;
    }
    // Nested stages often share a peak: the top stacks of one event are taken once.
    if (t.event == last_top_event_) {
      stage_peaks[t.stage] = last_top_;
      return;
    }
    std::vector<StackBytes> top;
    if (ordered_) {
      for (const auto& [bytes, stack] : stacks_by_bytes_) {
        if (top.size() == top_stacks) break;
        top.push_back(StackBytes{stack, bytes, stack_live_[stack].blocks});
      }
    } else {
      // Sized once for at most a stack an info holding blocks (a table that doubles holds
      // both sizes a while, each on fresh pages).
      absl::flat_hash_map<uint32_t, StackBytes> by_stack;
      by_stack.reserve(static_cast<size_t>(std::count_if(live.begin(), live.end(), [](uint64_t n) { return n; })));
      for (size_t i = 0; i < infos.size(); ++i) {
        if (!live[i]) continue;
        StackBytes& agg = by_stack[infos[i].stack];
        agg.stack = infos[i].stack;
        agg.bytes += live[i] * infos[i].size;
        agg.blocks += blocks_counted(infos[i], live[i]);
      }
      // Equal bytes by stack number: the order the table holds them in is no order.
      TopStacks kept(top_stacks);
      for (const auto& [stack, s] : by_stack) kept.add(s);
      top = kept.take();
    }
    if (t.stage != kRamLimit) {
      last_top_event_ = t.event;
      last_top_ = top;
    }
    stage_peaks[t.stage] = std::move(top);
  }

  std::vector<Target> targets_;
  size_t next_ = 0;
  uint64_t events_ = 0;
  LiveHeap heap_;
  uint64_t sample_rate_bytes_ = 0;
  bool ordered_ = false;
  std::vector<StackBytes> stack_live_;  // per stack, when ordered_
  std::set<std::pair<uint64_t, uint32_t>, ByBytesDescending> stacks_by_bytes_;  // (bytes, stack) with blocks live
  uint64_t last_top_event_ = UINT64_MAX;
  std::vector<StackBytes> last_top_;
};

}  // namespace memstage::reports
