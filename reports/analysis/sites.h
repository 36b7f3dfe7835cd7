// Per allocation site, a stack in a stage instance: the figures behind the flame graph and
// the top allocation sites (allocations, bytes, temporaries, bytes live at the run's peak,
// leaked bytes), one aggregator of the analysis (reports/analysis). Fed by events, samples
// and aggregate mode's site records. Temporaries (freed with no other allocation in
// between, heaptrack's definition) are counted here for the run too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "profiler/trace/block_vector.h"
#include "reports/analysis/live_heap.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

// A (stack, stage instance or row) pair as one number; stage -1 is outside every stage.
inline uint64_t figure_key(uint32_t stack, int32_t stage) {
  return (static_cast<uint64_t>(stack) << 32) | static_cast<uint32_t>(stage + 1);
}
inline uint32_t stack_of_key(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
inline int stage_of_key(uint64_t key) { return static_cast<int>(static_cast<uint32_t>(key)) - 1; }

class SiteAggregator {
 public:
  // An allocation of an allocation info (live_heap.h), and the free of one as a temporary:
  // counted per info, an array increment an event in place of a lookup of its site (a
  // lookup an event showed in profiles of the churn); the info names its
  // site (the reader numbers infos as they come, none is defined twice), and
  // finish() adds the counts to the sites' figures when the events end.
  void allocated_as(uint32_t id, const AllocationInfo& info) {
    if (++counts_of(id).allocations == UINT32_MAX) flush_info(id, info);
  }
  void temporary_as(uint32_t id, const AllocationInfo& info) {
    ++temporary_allocations_;
    if (++counts_of(id).temporaries == UINT32_MAX) flush_info(id, info);
  }
  // The events have ended and the sites' figures are asked for: every site's figures go
  // into one list sorted by (stack, stage), sized once (where a hash table of them took
  // half as much again, and twice that while it grew). Until then a site is its infos'
  // counts, a fraction of its place in the list.
  void finish(const AllocationInfos& infos);

  void leaked(uint32_t stack, int stage, uint64_t bytes) { at(stack, stage).leaked_bytes += bytes; }
  // The bytes live at the run's peak of each site in `bytes_by_key` ((figure_key, bytes),
  // sorted by key): one walk of the sorted list, where a search a site missed the cache.
  void live_at_peak(std::span<const std::pair<uint64_t, uint64_t>> bytes_by_key);
  // Aggregate mode: a site's latest figures, and the run's temporaries, as the capture says.
  void set(uint32_t stack, int stage, uint64_t allocations, uint64_t bytes, uint64_t temporaries) {
    StackStageFigures& f = at(stack, stage);
    f.allocations = allocations;
    f.bytes_allocated = bytes;
    f.temporary_allocations = temporaries;
  }
  // Aggregate mode from format 5: counts since the site's previous record.
  void add(uint32_t stack, int stage, uint64_t allocations, uint64_t bytes, uint64_t temporaries) {
    StackStageFigures& f = at(stack, stage);
    f.allocations += allocations;
    f.bytes_allocated += bytes;
    f.temporary_allocations += temporaries;
  }
  // Aggregate mode from format 5: every site met, each once, with the counts its records
  // added up (the first pass keeps them beside the site's live figures: one lookup a
  // record); before finish(), which places them with the rest. Given sorted by key (and
  // no counts per info), finish() makes its list of them in place, not beside them.
  void add_counted(std::vector<StackStageFigures> sites) { counted_ = std::move(sites); }
  // A site's figures so far (all zero for a site not met).
  StackStageFigures figures_of(uint32_t stack, int stage) const;
  void set_temporary_allocations(uint64_t n) { temporary_allocations_ = n; }

  uint64_t temporary_allocations() const { return temporary_allocations_; }

  // The stacks of all sites, each once, ascending, before finish() or after.
  std::vector<uint32_t> stacks(const AllocationInfos& infos) const;

  // The figures per stack and stage row (stage_rows.h), sorted by (stack, row); stacks are
  // still the trace's. Taken out: the aggregator holds none after.
  template <typename RowOf>
  std::vector<StackStageFigures> take_by_row(RowOf row_of) {
    return by_row(take_sorted(), row_of);
  }

  // The same of a pass still reading (TraceBeingWritten::so_far), nothing taken or
  // finished: the list made anew from the counts so far. Its cost is the sites and the
  // infos, not the events.
  // `counted`: aggregate mode's sites as add_counted() takes them, still the pass's (once
  // the pass ended and handed them over, add_counted's).
  template <typename RowOf>
  std::vector<StackStageFigures> by_row_so_far(const AllocationInfos& infos, RowOf row_of,
                                               std::span<const StackStageFigures> counted = {}) const {
    if (finished_) return by_row(sorted_, row_of);
    return by_row(sorted_sites(infos, counted_.empty() ? counted : std::span<const StackStageFigures>(counted_)), row_of);
  }

 private:
  template <typename RowOf>
  static std::vector<StackStageFigures> by_row(std::vector<StackStageFigures> sites, RowOf row_of) {
    for (StackStageFigures& f : sites) f.stage = row_of(f.stage);
    merge_equal_keys(sites);  // rows group instances: a stack's sites may now share a key
    return sites;
  }
  // The sites of the counts and figures so far, sorted by key, equal keys added up.
  std::vector<StackStageFigures> sorted_sites(const AllocationInfos& infos,
                                             std::span<const StackStageFigures> counted) const;
  // Sorts each stack's run of a list grouped by stack by key and adds up equal keys' figures.
  static void merge_equal_keys(std::vector<StackStageFigures>& grouped);
  std::vector<StackStageFigures> take_sorted();
  // Above the highest stack id of a site before finish() (0 with none), to size lists by
  // stack id: with counts by info, above every info's stack.
  size_t stack_ids(const AllocationInfos& infos, std::span<const StackStageFigures> counted) const;
  size_t listed(uint64_t key) const;
  StackStageFigures& at(uint32_t stack, int stage);
  void flush_info(uint32_t id, const AllocationInfo& info);

  // Before finish(): the sites given figures other than by counts (aggregate mode's, and
  // an info's counts about to wrap). After: the sites not in `sorted_` (none but where a
  // trace is inconsistent), kept apart rather than inserted in order.
  absl::flat_hash_map<uint64_t, StackStageFigures> unsorted_;
  std::vector<StackStageFigures> counted_;  // add_counted's, until finish()
  std::vector<StackStageFigures> sorted_;  // by (stack, stage), after finish()
  bool finished_ = false;
  // 8 bytes an info (a torch import's trace has ~8e5): flushed before either count wraps.
  struct InfoCounts {
    uint32_t allocations = 0;
    uint32_t temporaries = 0;
  };
  InfoCounts& counts_of(uint32_t info) {
    if (info >= per_info_.size()) per_info_.grow_to(size_t{info} + 1, InfoCounts{});
    return per_info_[info];
  }
  // Not yet in the figures; in blocks, held through pass two, where a doubling list touched
  // about three times its size in fresh pages as it grew and was shrunk (block_vector.h).
  trace::BlockVector<InfoCounts> per_info_;
  uint64_t temporary_allocations_ = 0;
};

}  // namespace memstage::reports
