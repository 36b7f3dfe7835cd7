// Per allocation site, a stack in a stage instance: the figures behind the flame graph and
// the top allocation sites (allocations, bytes, temporaries, bytes live at the run's peak,
// leaked bytes), one aggregator of the analysis (reports/analysis). Fed by events, samples
// and aggregate mode's site records. Temporaries (freed with no other allocation in
// between, heaptrack's definition) are counted here for the run too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

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
  // flush_infos() adds the counts to the sites' figures when the events end.
  void allocated_as(uint32_t id, const AllocationInfo& info) {
    if (++counts_of(id).allocations == UINT32_MAX) flush_info(id, info);
  }
  void temporary_as(uint32_t id, const AllocationInfo& info) {
    ++temporary_allocations_;
    if (++counts_of(id).temporaries == UINT32_MAX) flush_info(id, info);
  }
  void flush_infos(const std::vector<AllocationInfo>& infos) {
    for (uint32_t id = 0; id < per_info_.size() && id < infos.size(); ++id) flush_info(id, infos[id]);
  }

  void leaked(uint32_t stack, int stage, uint64_t bytes) { at(stack, stage).leaked_bytes += bytes; }
  void live_at_peak(uint32_t stack, int stage, uint64_t bytes) { at(stack, stage).live_at_peak_bytes = bytes; }
  // Aggregate mode: a site's latest figures, and the run's temporaries, as the capture says.
  void set(uint32_t stack, int stage, uint64_t allocations, uint64_t bytes, uint64_t temporaries) {
    StackStageFigures& f = at(stack, stage);
    f.allocations = allocations;
    f.bytes_allocated = bytes;
    f.temporary_allocations = temporaries;
  }
  void set_temporary_allocations(uint64_t n) { temporary_allocations_ = n; }

  uint64_t temporary_allocations() const { return temporary_allocations_; }

  // The stacks of all sites, each once, ascending: marked by stack id (the trace's,
  // numbered from 0), not sorted (7e5 sites on a torch import).
  std::vector<uint32_t> stacks() const {
    std::vector<bool> has_site(stack_ids());
    for (const auto& [key, f] : figures_) has_site[stack_of_key(key)] = true;
    std::vector<uint32_t> out;
    for (uint32_t stack = 0; stack < has_site.size(); ++stack) {
      if (has_site[stack]) out.push_back(stack);
    }
    return out;
  }

  // The figures per stack and stage row (stage_rows.h), sorted by (stack, row); stacks are
  // still the trace's. (A trace of hundreds of thousands of sites: one list, ordered, then
  // the figures of equal keys added up in place.) Taken out: the aggregator holds none
  // after, so that its table (57 MiB on a torch import's trace) is not held beside the list
  // for the rest of the analysis.
  template <typename RowOf>
  std::vector<StackStageFigures> take_by_row(RowOf row_of) {
    std::vector<StackStageFigures> out = by_row(figures_, row_of);
    decltype(figures_)().swap(figures_);
    return out;
  }

  // The same of a pass still reading (TraceBeingWritten::so_far), nothing taken or flushed:
  // the counts not yet in the sites' figures added to a copy. Its cost is the sites and
  // the infos, not the events.
  template <typename RowOf>
  std::vector<StackStageFigures> by_row_so_far(const std::vector<AllocationInfo>& infos, RowOf row_of) const {
    Figures figures = figures_;
    for (uint32_t id = 0; id < per_info_.size() && id < infos.size(); ++id) {
      add_counts(figures, per_info_[id], infos[id]);
    }
    return by_row(figures, row_of);
  }

 private:
  // Open addressing, the figures inline: a torch import's trace has ~7e5 sites, each
  // touched by the allocations of its stack.
  using Figures = absl::flat_hash_map<uint64_t, StackStageFigures>;

  template <typename RowOf>
  static std::vector<StackStageFigures> by_row(const Figures& figures, RowOf row_of) {
    // Placed by stack id (dense: a count per stack, then each site in its stack's place),
    // then the few rows of each stack sorted, cheaper than sorting the whole list.
    std::vector<uint32_t> place(stack_ids(figures) + 1, 0);
    for (const auto& [key, f] : figures) ++place[stack_of_key(key) + 1];
    for (size_t i = 1; i < place.size(); ++i) place[i] += place[i - 1];
    std::vector<StackStageFigures> out(figures.size());
    for (const auto& [key, f] : figures) {
      StackStageFigures& placed = out[place[stack_of_key(key)]++];
      placed = f;
      placed.stage = row_of(stage_of_key(key));
    }
    const auto key_of = [](const StackStageFigures& f) { return figure_key(f.stack, f.stage); };
    for (size_t begin = 0; begin < out.size();) {
      size_t end = begin + 1;
      while (end < out.size() && out[end].stack == out[begin].stack) ++end;
      if (end - begin > 1) {
        std::sort(out.begin() + begin, out.begin() + end, [&](const auto& a, const auto& b) { return key_of(a) < key_of(b); });
      }
      begin = end;
    }
    size_t kept = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (kept && key_of(out[kept - 1]) == key_of(out[i])) {
        StackStageFigures& m = out[kept - 1];
        m.allocations += out[i].allocations;
        m.bytes_allocated += out[i].bytes_allocated;
        m.temporary_allocations += out[i].temporary_allocations;
        m.live_at_peak_bytes += out[i].live_at_peak_bytes;
        m.leaked_bytes += out[i].leaked_bytes;
      } else {
        out[kept++] = out[i];
      }
    }
    out.resize(kept);
    return out;
  }

  // One more than the highest stack id of a site (0 with none): the size of a table by id.
  size_t stack_ids() const { return stack_ids(figures_); }
  static size_t stack_ids(const Figures& figures) {
    if (figures.empty()) return 0;
    uint32_t highest = 0;
    for (const auto& [key, f] : figures) highest = std::max(highest, stack_of_key(key));
    return size_t{highest} + 1;
  }
  static StackStageFigures& at(Figures& figures, uint32_t stack, int stage) {
    StackStageFigures& f = figures[figure_key(stack, stage)];
    f.stack = stack;
    f.stage = stage;
    return f;
  }
  StackStageFigures& at(uint32_t stack, int stage) { return at(figures_, stack, stage); }
  Figures figures_;
  // 8 bytes an info (a torch import's trace has ~8e5): flushed before either count wraps.
  struct InfoCounts {
    uint32_t allocations = 0;
    uint32_t temporaries = 0;
  };
  InfoCounts& counts_of(uint32_t info) {
    if (info >= per_info_.size()) per_info_.resize(info + 1);
    return per_info_[info];
  }
  std::vector<InfoCounts> per_info_;  // not yet in figures_
  void flush_info(uint32_t id, const AllocationInfo& info) {
    if (id >= per_info_.size()) return;
    add_counts(figures_, std::exchange(per_info_[id], InfoCounts{}), info);
  }
  static void add_counts(Figures& figures, const InfoCounts& n, const AllocationInfo& info) {
    if (n.allocations == 0 && n.temporaries == 0) return;
    StackStageFigures& f = at(figures, info.stack, info.stage);
    f.allocations += uint64_t{n.allocations} * blocks_counted(info, 1);
    f.bytes_allocated += uint64_t{n.allocations} * info.size;
    f.temporary_allocations += n.temporaries;
  }
  uint64_t temporary_allocations_ = 0;
};

}  // namespace memstage::reports
