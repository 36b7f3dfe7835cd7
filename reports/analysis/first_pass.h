// Pass one of the analysis (analyzer.h): one trace's records, each handed to the
// aggregators that answer one question apiece (peaks.h, stages.h, sites.h, timeline.h,
// growth.h, live_heap.h, anonymous_mappings.h, device_memory.h, stack_tree.h), and what the
// report is assembled from besides: the process, its samples, modules and Python code.
// Everything but the stacks held at the peaks (pass two, peak_snapshots.h). Aggregate
// mode's records are kept as the tracer wrote them; aggregate_capture.h folds them in.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/analyzer.h"
#include "reports/analysis/agg_site_table.h"
#include "reports/analysis/anonymous_mappings.h"
#include "reports/analysis/device_memory.h"
#include "reports/analysis/event_log.h"
#include "reports/analysis/growth.h"
#include "reports/analysis/live_heap.h"
#include "reports/analysis/peaks.h"
#include "reports/analysis/sites.h"
#include "reports/analysis/stack_tree.h"
#include "reports/analysis/stages.h"
#include "reports/analysis/timeline.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

using trace::kNsPerS;

// Counts the bytes of text and lists the analysis keeps from its traces, against
// AnalysisOptions::max_kept_text_bytes. Charged by the passes of several traces at once.
class KeptTextBudget {
 public:
  explicit KeptTextBudget(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  void charge(uint64_t bytes, const char* what) {
    if (kept_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes > max_bytes_)
      throw AnalysisLimitError(fmt::format("the traces describe more than {} MiB of {} (and other text) to keep: "
                                           "too large to analyse",
                                           max_bytes_ >> 20, what));
  }

 private:
  uint64_t max_bytes_;
  std::atomic<uint64_t> kept_bytes_{0};
};

// What the allocator said it held at one moment, with the heap, RSS and tracer's share then.
struct AllocatorSample {
  uint64_t t_ns;
  trace::AllocatorStatsRecord stats;
  uint64_t live_bytes;
  uint64_t rss_bytes;
  uint64_t tracer_bytes;
};

// Pass one: everything but the stacks at the peaks.
class FirstPass : public trace::TraceVisitor {
 public:
  explicit FirstPass(KeptTextBudget& budget) : budget_(budget) {}
  trace::ProcessInfo info;
  bool have_info = false;
  StageAggregator stages;
  // Stage begins the tracer dropped past its limits (by trace::StageLimit).
  struct DroppedStageBegins {
    uint64_t first_t_ns = 0;
    uint64_t limit = 0;
    uint64_t begins = 0;
  };
  std::optional<DroppedStageBegins> dropped_stage_begins[2];
  LiveHeap heap;
  AnonymousMappings mappings;
  DeviceMemoryReplay device;

  uint64_t now_ns = 0;
  uint64_t events = 0;  // alloc/free events so far: the replay position of pass two
  EventLog event_log;   // those events, for pass two to replay
  Peaks peaks;  // the run's
  uint64_t allocations = 0, frees = 0, bytes_allocated = 0;
  uint64_t unknown_frees = 0, lost_events = 0;
  std::optional<int> signal;
  bool ended = false;
  std::optional<std::string> exec_path;  // the last exec the process called
  std::optional<RamLimitReport> ram_limit;
  uint64_t ram_limit_event = 0;

  uint64_t last_rss_bytes = 0, last_tracer_bytes = 0;
  std::optional<AllocatorSample> last_allocator;
  std::vector<AllocatorSample> allocator_samples;
  std::optional<trace::CountersRecord> last_counters;

  std::vector<std::vector<trace::Module>> module_snapshots;
  std::unordered_map<uint64_t, trace::PythonCode> python_codes;
  std::optional<trace::PythonInfo> python;
  std::vector<std::string> deep_bind_modules;
  bool attached = false;
  std::vector<trace::MemorySharesRecord> shares;
  trace::JobPlace place;
  StackTree stacks;
  SiteAggregator sites;

  TimelineAggregator timeline;

  // Growth over time, full mode: live bytes per stack taken as the events replay, first
  // every sampling tick (10 ms: a run of seconds still gets a hundred points), the
  // spacing doubling as the run goes on so that at most 256 snapshots are held.
  GrowthAggregator growth{[] {
    GrowthOptions o;
    o.initial_interval_s = 0.01;
    return o;
  }()};
  StackLiveBytesReplay stack_live;
  bool full_mode() const { return have_info && info.mode == trace::Mode::kFull; }
  // Full mode's events give exact live bytes per stack; sample mode's samples, weighted,
  // estimates of them (SamplingReport says how good).
  bool replays_growth() const { return have_info && (info.mode == trace::Mode::kFull || info.mode == trace::Mode::kSample); }

  // Aggregate mode: the heap as kAggHeap records say, and the latest figures of each
  // site, stage and the run's peak. Each site's live bytes and blocks and, from format 5,
  // the counts its records add up are kept in one place (one lookup a record) until
  // finish() (then agg_counts, until hand_over_agg_counts gives them to `sites`); the
  // counts it adds to its stage instance until the stages are made (apply_aggregate).
  uint64_t agg_live_bytes = 0;
  // Every site met until finish(); those holding blocks then kept by key (for_each_held:
  // the leaks step numbers stacks as it meets them).
  AggSiteTable agg_sites;
  struct AggStageCounts {
    int64_t allocations = 0, bytes_allocated = 0, temporary_allocations = 0;
  };
  std::vector<AggStageCounts> agg_stage_counts;  // by stage instance
  std::unordered_map<uint32_t, trace::AggStageRecord> agg_stages;
  // The run peak's sites' live figures by figure_key (which holds the stack and stage).
  struct AggPeakLive {
    uint64_t bytes = 0, blocks = 0;
  };
  absl::flat_hash_map<uint64_t, AggPeakLive> agg_run_peak;
  std::vector<trace::AggPeakSiteRecord> agg_run_peak_pending;  // until their snapshot closes
  std::optional<trace::AggSnapshotRecord> agg_snapshot;
  std::optional<std::vector<trace::AggStackBytes>> agg_ram_limit_stacks;

  // Sample mode: the sampler's rate, the allocations sampled. Stats and sample modes: the
  // exact live heap the tracer counted (kHeapCounters; stats-mode traces from before it
  // counted have none, and their heap is the allocator's in-use figure).
  uint64_t sample_rate_bytes = 0;
  uint64_t samples = 0;
  uint64_t counted_live_bytes = 0;
  bool heap_counted = false;
  // A forked child's frees of its inheritance counted against it from some point (stats and
  // sample modes, kInheritedFreesUntold).
  bool inherited_frees_untold = false;

  int innermost() const { return stages.innermost(); }

  void on_process_info(const trace::ProcessInfo& i) override {
    info = i;
    have_info = true;
  }
  void on_time(uint64_t t) override {
    now_ns = std::max(now_ns, t);
    if (replays_growth()) stack_live.tick(now_ns / kNsPerS, growth);
  }
  void on_modules(const std::vector<trace::Module>& m) override {
    uint64_t bytes = 0;
    for (const trace::Module& module : m) bytes += sizeof(trace::Module) + module.path.size() + module.segments.size() * sizeof(trace::Segment);
    budget_.charge(bytes, "module lists");
    module_snapshots.push_back(m);
  }
  void on_stack_node(uint32_t id, uint32_t parent, uint64_t return_address) override {
    stacks.add_node(id, parent, return_address, static_cast<int>(module_snapshots.size()) - 1);
  }
  bool keeps_stack_node_addresses() const override { return true; }
  uint64_t stack_node_address(uint32_t id) const override { return stacks.return_address(id); }
  void on_stack(uint32_t id, std::span<const uint64_t> ips) override {
    stacks.add_stack(id, ips, static_cast<int>(module_snapshots.size()) - 1);
  }

  void reach(uint64_t live) { reach(live, events); }
  // `event`: the replay position, handed over in a register by on_alloc. Read back from
  // the field it had just incremented, it was loaded with its neighbour as one 16-byte
  // vector that the 8-byte store could not forward to: a third of on_alloc's time.
  void reach(uint64_t live, uint64_t event) {
    timeline.reach(live, event);
    peaks.reach_heap(live, now_ns, event);
    stages.reach_heap(live, now_ns, event);
  }

  void on_alloc_info(uint32_t id, uint64_t size, uint32_t stack, int32_t stage) override {
    heap.define(id, allocation_info(size, stack, stage, sample_rate_bytes));
  }

  void on_sampling(uint64_t rate_bytes) override { sample_rate_bytes = rate_bytes; }

  // Stats and sample modes' heap figures: exact, counted on every call (sample mode's
  // on_alloc's are estimates).
  void on_heap_counters(uint64_t t, uint64_t live, uint64_t high) override {
    now_ns = std::max(now_ns, t);
    counted_live_bytes = live;
    heap_counted = true;
    reach(std::max(high, live));
  }

  void on_alloc(uint32_t info, bool) override {
    const uint64_t event = ++events;
    event_log.allocated(info);
    const uint64_t live = heap.allocate(info);
    const AllocationInfo a = heap.info(info);
    const uint64_t size = a.size;
    const int stage = a.stage;
    sites.allocated_as(info, a);
    stack_live.add(a.stack, static_cast<int64_t>(size));
    if (sample_mode()) {
      // The totals and stage counts come from the tracer's counters (on_counters).
      ++samples;
      stages.allocated(stage, size, false);
      return;
    }
    ++allocations;
    bytes_allocated += size;
    stages.allocated(stage, size, true);
    reach(live, event);
  }

  void on_free(uint32_t info, bool temporary) override {
    ++events;
    event_log.freed(info);
    if (!heap.free(info)) {
      ++unknown_frees;
      return;
    }
    const AllocationInfo block = heap.info(info);
    if (!sample_mode()) ++frees;
    stack_live.add(block.stack, -static_cast<int64_t>(block.size));
    stages.freed(block.stage, block.size, temporary);
    if (temporary) sites.temporary_as(info, block);
  }

  void on_mmap(uint64_t address, uint64_t length, uint32_t) override {
    mappings.map(address, length, true);
    note_mappings();
  }
  void on_mmap_reserved(uint64_t address, uint64_t length, uint32_t) override { mappings.map(address, length, false); }
  void on_mprotect(uint64_t address, uint64_t length, bool accessible) override {
    mappings.protect(address, length, accessible);
    note_mappings();
  }
  void on_munmap(uint64_t address, uint64_t length) override { mappings.unmap(address, length); }
  void on_mremap(uint64_t old_address, uint64_t old_length, uint64_t new_address, uint64_t new_length,
                 uint32_t) override {
    const std::optional<bool> accessible = mappings.accessible_at(old_address);
    mappings.unmap(old_address, old_length);
    if (accessible) mappings.map(new_address, new_length, *accessible);
    note_mappings();
  }
  void note_mappings() {
    peaks.note_mmap(mappings.bytes());
    stages.note_mmap(mappings.bytes());
  }

  void on_device_alloc(const trace::DeviceAllocRecord& r) override {
    now_ns = std::max(now_ns, r.t_ns);
    device.allocate(r, innermost());
  }
  void on_device_free(uint64_t t, uint64_t address, trace::DeviceMemory kind) override {
    now_ns = std::max(now_ns, t);
    device.free(t, address, kind, innermost());
  }
  void on_device_cache(uint64_t t, uint64_t reserved, uint64_t allocated) override {
    now_ns = std::max(now_ns, t);
    device.cache(t, reserved, allocated, innermost());
  }

  void on_stage_name(uint32_t, const std::string& name) override {
    budget_.charge(sizeof(std::string) + name.size(), "stage names");
    stages.names.push_back(name);
  }

  void on_stage_begin(uint32_t name_id, uint64_t t) override {
    now_ns = std::max(now_ns, t);
    add_timeline_point();
    stages.begin(name_id, now_ns, Peaks::starting_at(heap_now(), now_ns, last_rss_bytes, last_tracer_bytes),
                 last_counters ? &*last_counters : nullptr);
    device.begin_stage();
  }

  void on_stage_end(uint64_t t) override {
    if (innermost() < 0) return;
    now_ns = std::max(now_ns, t);
    close_innermost(true);
    add_timeline_point();
  }

  // closed: by its end record, not by the run's end.
  void close_innermost(bool closed) {
    StageInstance& s = stages.instances[innermost()];
    if (last_allocator && last_allocator->t_ns >= s.start_ns) {
      s.breakdown = breakdown_from(*last_allocator, heap_now());
      s.has_breakdown = true;
    }
    const int index = stages.end_innermost(now_ns, last_counters ? &*last_counters : nullptr, closed);
    device.end_stage(index, stages.instances[index].parent);
  }

  bool stats_mode() const { return info.mode == trace::Mode::kStats; }
  bool aggregate_mode() const { return info.mode == trace::Mode::kAggregate; }
  bool sample_mode() const { return info.mode == trace::Mode::kSample; }
  // Per-stage allocation counts come from the tracer's process-wide counters.
  bool counts_from_counters() const { return stats_mode() || sample_mode(); }

  // Stats mode sees no allocation events and sample mode a sample of them: their heap is
  // what the tracer counted (an old stats-mode trace's, what the allocator counts in use).
  // Aggregate mode's is what the latest kAggHeap said.
  uint64_t heap_now() const {
    if (heap_counted) return counted_live_bytes;
    if (stats_mode()) return last_allocator ? last_allocator->stats.in_use_bytes : 0;
    if (aggregate_mode()) return agg_live_bytes;
    if (sample_mode()) return counted_live_bytes;
    return heap.live_bytes();
  }

  // The heap's highest since the previous record, reached at this record's time and
  // stage (trace_format.h, kAggHeap): the same peaks as replaying the events.
  void on_agg_heap(uint64_t live, uint64_t high) override {
    ++events;
    reach(high);
    agg_live_bytes = live;
  }
  // A record's place in the table of every site, then its entry, is a cache miss each:
  // each place is fetched while the records kAggPlacesAhead before it are worked on, each
  // entry (its place cached by then) kAggSitesAhead.
  static constexpr size_t kAggPlacesAhead = 16;
  static constexpr size_t kAggSitesAhead = 8;
  void on_agg_sites(std::span<const trace::AggSiteRecord> batch) override {
    for (size_t i = 0; i < batch.size() && i < kAggPlacesAhead; ++i) agg_sites.prefetch_place(batch[i].stack);
    for (size_t i = 0; i < batch.size() && i < kAggSitesAhead; ++i) prefetch_agg_site(batch[i]);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (i + kAggPlacesAhead < batch.size()) agg_sites.prefetch_place(batch[i + kAggPlacesAhead].stack);
      if (i + kAggSitesAhead < batch.size()) prefetch_agg_site(batch[i + kAggSitesAhead]);
      on_agg_site(batch[i]);
    }
  }
  void prefetch_agg_site(const trace::AggSiteRecord& r) const {
    agg_sites.prefetch(r.stack, r.stage);
    stack_live.prefetch(r.stack);
  }
  // Each snapshot's sites feed growth over time: live bytes per stack at its moment.
  void on_agg_site(const trace::AggSiteRecord& r) override {
    AggSite& site = agg_sites.at(r.stack, r.stage, stacks.stacks());
    stack_live.add(r.stack, static_cast<int64_t>(r.live_bytes) - static_cast<int64_t>(site.live_bytes));
    site.live_bytes = r.live_bytes;
    site.live_blocks = r.live_blocks;
    AggStageCounts added{static_cast<int64_t>(r.allocations), static_cast<int64_t>(r.bytes_allocated),
                         static_cast<int64_t>(r.temporary_allocations)};
    if (r.increments) {
      add_counts(r, site);
    } else {  // before format 5: totals so far
      const StackStageFigures before = sites.figures_of(r.stack, r.stage);
      added.allocations -= static_cast<int64_t>(before.allocations);
      added.bytes_allocated -= static_cast<int64_t>(before.bytes_allocated);
      added.temporary_allocations -= static_cast<int64_t>(before.temporary_allocations);
      sites.set(r.stack, r.stage, r.allocations, r.bytes_allocated, r.temporary_allocations);
    }
    // A stage instance begins before its sites' records; one never begun (a stage dropped
    // at the limits, a damaged trace) has no instance to count in.
    if (r.stage < 0 || static_cast<size_t>(r.stage) >= stages.instances.size()) return;
    if (static_cast<size_t>(r.stage) >= agg_stage_counts.size()) agg_stage_counts.resize(stages.instances.size());
    AggStageCounts& stage = agg_stage_counts[r.stage];
    stage.allocations += added.allocations;
    stage.bytes_allocated += added.bytes_allocated;
    stage.temporary_allocations += added.temporary_allocations;
  }
  void add_counts(const trace::AggSiteRecord& r, AggSite& site) {
    if (__builtin_expect(uint64_t{site.allocations} + r.allocations > UINT32_MAX ||
                             uint64_t{site.temporary_allocations} + r.temporary_allocations > UINT32_MAX,
                         0)) {
      spill_counts(r.stack, r.stage, site);
      if (r.allocations > UINT32_MAX || r.temporary_allocations > UINT32_MAX) {
        sites.add(r.stack, r.stage, r.allocations, r.bytes_allocated, r.temporary_allocations);
        return;
      }
    }
    site.allocations += static_cast<uint32_t>(r.allocations);
    site.bytes_allocated += r.bytes_allocated;
    site.temporary_allocations += static_cast<uint32_t>(r.temporary_allocations);
  }
  void spill_counts(uint32_t stack, int stage, AggSite& site) {
    sites.add(stack, stage, site.allocations, site.bytes_allocated, site.temporary_allocations);
    site.allocations = site.temporary_allocations = 0;
    site.bytes_allocated = 0;
  }
  // Aggregate mode's counts per site from finish() until the sites' list is made
  // (hand_over_agg_counts): 24 bytes a site where the list takes 48, held through pass two.
  struct AggCounts {
    uint32_t stack;
    int32_t stage;
    uint32_t allocations, temporary_allocations;
    uint64_t bytes_allocated;
  };
  std::vector<AggCounts> agg_counts;
  static AggCounts agg_counts_of(uint64_t key, const AggSite& s) {
    return AggCounts{stack_of_key(key), stage_of_key(key), s.allocations, s.temporary_allocations, s.bytes_allocated};
  }
  static StackStageFigures figures_of(const AggCounts& c) {
    return StackStageFigures{c.stack, c.stage, c.allocations, c.bytes_allocated, c.temporary_allocations};
  }
  // Aggregate mode's sites with the counts their records added up, as `sites` takes them.
  std::vector<StackStageFigures> agg_site_counts() const {
    std::vector<StackStageFigures> counted;
    counted.reserve(agg_sites.size() + agg_counts.size());
    agg_sites.for_each([&](uint64_t key, const AggSite& s) { counted.push_back(figures_of(agg_counts_of(key, s))); });
    for (const AggCounts& c : agg_counts) counted.push_back(figures_of(c));
    return counted;
  }
  // Every site's stack, each once, ascending: the sites' and aggregate mode's counted ones
  // (a bit a stack: marking a million counted sites costs a fraction of sorting them).
  std::vector<uint32_t> site_stacks() const {
    std::vector<uint32_t> out = sites.stacks(heap.infos());
    if (agg_counts.empty()) return out;
    uint32_t bound = out.empty() ? 0 : out.back() + 1;  // out is ascending
    for (const AggCounts& c : agg_counts) bound = std::max(bound, c.stack + 1);
    std::vector<bool> is_site(bound, false);
    for (const uint32_t stack : out) is_site[stack] = true;
    for (const AggCounts& c : agg_counts) is_site[c.stack] = true;
    out.clear();
    for (uint32_t stack = 0; stack < bound; ++stack) {
      if (is_site[stack]) out.push_back(stack);
    }
    return out;
  }
  // The counts go to `sites`, for its list made after pass two (in the room the stack
  // resolution's walk state leaves), sorted by key: the list is made of them in place.
  void hand_over_agg_counts() {
    if (agg_counts.empty()) return;
    std::sort(agg_counts.begin(), agg_counts.end(), [](const AggCounts& a, const AggCounts& b) {
      return figure_key(a.stack, a.stage) < figure_key(b.stack, b.stage);
    });
    std::vector<StackStageFigures> counted;
    counted.reserve(agg_counts.size());
    for (const AggCounts& c : agg_counts) counted.push_back(figures_of(c));
    std::vector<AggCounts>().swap(agg_counts);
    sites.add_counted(std::move(counted));
  }
  // Aggregate mode's sites holding blocks, by key.
  struct AggHeld {
    uint64_t key;
    uint64_t live_bytes;
    uint64_t live_blocks;
  };
  std::vector<AggHeld> agg_sites_held() const {
    std::vector<AggHeld> held;
    agg_sites.for_each([&](uint64_t key, const AggSite& s) {
      if (s.live_blocks) held.push_back(AggHeld{key, s.live_bytes, s.live_blocks});
    });
    std::sort(held.begin(), held.end(), [](const AggHeld& a, const AggHeld& b) { return a.key < b.key; });
    return held;
  }
  // The table of every site is let go, given back as its counts are listed; the sites
  // holding blocks are all the leaks step needs.
  void let_go_of_agg_sites() {
    if (agg_sites.empty()) return;
    agg_held_at_end_ = agg_sites_held();
    agg_counts.reserve(agg_sites.size());
    agg_sites.take_each([&](uint64_t key, const AggSite& s) { agg_counts.push_back(agg_counts_of(key, s)); });
  }
  // The blocks live now per site, as `held(stack, stage, bytes, blocks)`: full and sample
  // mode's live heap (a sample standing for the blocks it estimates), aggregate mode's sites.
  template <typename Held>
  void for_each_held(Held held) const {
    if (held_at_end_) {
      for (const HeldAtEnd& h : *held_at_end_) held(h.stack, h.stage, h.bytes, h.blocks);
    } else {
      const std::vector<uint64_t>& live_blocks = heap.live_blocks();
      for (size_t i = 0; i < live_blocks.size(); ++i) {
        if (!live_blocks[i]) continue;
        const AllocationInfo block = heap.info(static_cast<uint32_t>(i));
        held(block.stack, block.stage, live_blocks[i] * block.size, blocks_counted(block, live_blocks[i]));
      }
    }
    const auto held_agg = [&](const std::vector<AggHeld>& sites_held) {
      for (const AggHeld& h : sites_held) held(stack_of_key(h.key), stage_of_key(h.key), h.live_bytes, h.live_blocks);
    };
    if (agg_sites.empty()) {
      held_agg(agg_held_at_end_);
    } else {
      held_agg(agg_sites_held());
    }
  }
  void on_agg_stage(const trace::AggStageRecord& r) override { agg_stages[r.stage] = r; }
  void on_agg_peak_site(const trace::AggPeakSiteRecord& r) override { agg_run_peak_pending.push_back(r); }
  void on_agg_snapshot(const trace::AggSnapshotRecord& r) override {
    apply_run_peak_sites();
    agg_snapshot = r;
    stack_live.flush(r.t_ns / kNsPerS, growth);
  }
  // A snapshot's run-peak sites: changes to the run peak's (version 4 on), or the whole
  // list, replacing it.
  void apply_run_peak_sites() {
    if (agg_run_peak_pending.empty()) return;
    if (!agg_run_peak_pending.front().change) agg_run_peak.clear();
    for (const trace::AggPeakSiteRecord& r : agg_run_peak_pending) {
      if (r.blocks) {
        agg_run_peak[figure_key(r.stack, r.stage)] = AggPeakLive{r.bytes, r.blocks};
      } else {
        agg_run_peak.erase(figure_key(r.stack, r.stage));
      }
    }
    // A snapshot's whole list is as long as the sites holding memory: its room is not held
    // through the rest of the reading for the few changes each snapshot after it lists.
    constexpr size_t kPendingKept = 4096;
    if (agg_run_peak_pending.capacity() > kPendingKept) {
      std::vector<trace::AggPeakSiteRecord>().swap(agg_run_peak_pending);
    } else {
      agg_run_peak_pending.clear();
    }
  }
  void on_agg_ram_limit_stacks(const std::vector<trace::AggStackBytes>& stacks) override {
    agg_ram_limit_stacks = stacks;
  }

  static RssBreakdown breakdown_from(const AllocatorSample& a, uint64_t live) {
    RssBreakdown b;
    b.live_bytes = live;
    b.allocator_in_use_bytes = std::max(a.stats.in_use_bytes, live);
    b.allocator_resident_bytes = std::max(a.stats.resident_bytes, b.allocator_in_use_bytes);
    b.rss_bytes = a.rss_bytes;
    b.tracer_bytes = a.tracer_bytes;
    b.estimated = a.stats.in_use_bytes == 0;
    b.t_s = a.t_ns / kNsPerS;
    return b;
  }

  void on_rss(uint64_t t, uint64_t rss, uint64_t tracer) override {
    now_ns = std::max(now_ns, t);
    // Older tracers counted their mappings' size rather than what of them is resident: a
    // share larger than RSS itself is not one, and is left out.
    if (tracer > rss) tracer = 0;
    last_rss_bytes = rss;
    last_tracer_bytes = tracer;
    peaks.sample_rss(rss, tracer);
    stages.sample_rss(rss, tracer);
    add_timeline_point();
  }

  // When the kernel's high-water mark came is unknown: the run's peak takes it, no stage
  // and no point of the timeline does.
  void on_rss_high_water(uint64_t t, uint64_t rss) override {
    now_ns = std::max(now_ns, t);
    peaks.rss_high_water(rss);
  }
  void on_inherited_frees_untold(uint64_t t) override {
    now_ns = std::max(now_ns, t);
    inherited_frees_untold = true;
  }

  void on_allocator_stats(const trace::AllocatorStatsRecord& r) override {
    now_ns = std::max(now_ns, r.t_ns);
    if (stats_mode() && !heap_counted) {
      last_allocator = AllocatorSample{r.t_ns, r, r.in_use_bytes, last_rss_bytes, last_tracer_bytes};
      reach(r.in_use_bytes);
    }
    AllocatorSample sample{r.t_ns, r, heap_now(), last_rss_bytes, last_tracer_bytes};
    last_allocator = sample;
    allocator_samples.push_back(sample);
  }

  void on_counters(const trace::CountersRecord& c) override {
    now_ns = std::max(now_ns, c.t_ns);
    last_counters = c;
    allocations = c.allocations;
    frees = c.frees;
    bytes_allocated = c.bytes_allocated;
  }

  void on_end(uint64_t t) override {
    now_ns = std::max(now_ns, t);
    ended = true;
  }
  void on_signal(uint64_t t, int sig) override {
    now_ns = std::max(now_ns, t);
    signal = sig;
  }
  void on_lost(uint64_t n) override { lost_events += n; }
  void on_ram_limit(uint64_t t, uint64_t rss, uint64_t limit) override {
    now_ns = std::max(now_ns, t);
    ram_limit = RamLimitReport{limit, rss, t / kNsPerS, innermost(), {}};
    ram_limit_event = events;
  }
  void on_python_code(const trace::PythonCode& code) override { python_codes[code.id] = code; }
  void on_python_info(const trace::PythonInfo& i) override { python = i; }
  void on_deep_bind_removed(const std::string& path) override {
    budget_.charge(sizeof(std::string) + path.size(), "module paths");
    deep_bind_modules.push_back(path);
  }
  void on_attached(uint64_t) override { attached = true; }
  void on_stage_limit(uint64_t t, trace::StageLimit limit, uint64_t limit_value, uint64_t begins) override {
    auto& dropped = dropped_stage_begins[static_cast<size_t>(limit)];
    if (!dropped) dropped = DroppedStageBegins{t, limit_value, 0};
    dropped->begins = std::max(dropped->begins, begins);
  }
  void on_exec(uint64_t t, const std::string& path) override {
    now_ns = std::max(now_ns, t);
    exec_path = path;
  }
  // The exec went through: nothing ended the process after it (a failed exec returns
  // and the program goes on to its own end).
  bool replaced_by_exec() const { return exec_path && !ended && !signal; }
  void on_memory_shares(const trace::MemorySharesRecord& r) override {
    now_ns = std::max(now_ns, r.t_ns);
    shares.push_back(r);
  }
  void on_job_place(const trace::JobPlace& p) override { place = p; }

  void add_timeline_point() {
    timeline.add_point(now_ns / kNsPerS, heap_now(), last_rss_bytes, last_tracer_bytes, innermost(), events);
  }

  // The run is over: stages still open end with it.
  void finish() {
    add_timeline_point();
    if (replays_growth()) stack_live.flush(now_ns / kNsPerS, growth);
    growth.finish();
    // The growth series hold what it replayed: its per-stack counts are not needed again.
    // The sites' list is made after pass two (analyzer.cpp), never beside its resolution.
    stack_live = StackLiveBytesReplay();
    let_go_of_agg_sites();  // aggregate mode's counts kept for the sites' list made after pass two
    keep_held_at_end();
    heap.shrink_to_fit();
    device.count_leaks();
    while (innermost() >= 0) close_innermost(false);
  }

 private:
  // The events' live heap at the end, each info holding blocks in info order, as
  // for_each_held gives it: the live counts by info go at finish(), not held through pass two.
  struct HeldAtEnd {
    uint32_t stack;
    int32_t stage;
    uint64_t bytes;
    uint64_t blocks;
  };
  void keep_held_at_end() {
    if (held_at_end_) return;
    const std::vector<uint64_t>& live_blocks = heap.live_blocks();
    std::vector<HeldAtEnd> kept;
    kept.reserve(static_cast<size_t>(std::count_if(live_blocks.begin(), live_blocks.end(), [](uint64_t n) { return n; })));
    for (size_t i = 0; i < live_blocks.size(); ++i) {
      if (!live_blocks[i]) continue;
      const AllocationInfo block = heap.info(static_cast<uint32_t>(i));
      kept.push_back(HeldAtEnd{block.stack, block.stage, live_blocks[i] * block.size, blocks_counted(block, live_blocks[i])});
    }
    held_at_end_ = std::move(kept);
    heap.let_go_of_live_blocks();
  }
  std::optional<std::vector<HeldAtEnd>> held_at_end_;
  std::vector<AggHeld> agg_held_at_end_;  // aggregate mode's, from finish()

  KeptTextBudget& budget_;
};

// One trace and what pass one made of it.
struct TraceFile {
  TraceFile(KeptTextBudget& budget, size_t max_event_log_bytes) : pass(budget) {
    pass.event_log = EventLog(max_event_log_bytes);
  }
  std::string path;
  FirstPass pass;
  trace::ReadSummary summary;
};

}  // namespace memstage::reports
