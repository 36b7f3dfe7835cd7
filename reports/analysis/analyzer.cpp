#include "reports/analysis/analyzer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <map>
#include <thread>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/device_memory.h"
#include "reports/analysis/growth.h"
#include "reports/analysis/job_clock.h"
#include "reports/analysis/anonymous_mappings.h"
#include "reports/analysis/live_heap.h"
#include "reports/analysis/peak_snapshots.h"
#include "reports/analysis/peaks.h"
#include "reports/analysis/resident_shares.h"
#include "reports/analysis/sites.h"
#include "reports/analysis/stack_resolver.h"
#include "reports/analysis/stack_tree.h"
#include "reports/analysis/stage_rows.h"
#include "reports/analysis/stages.h"
#include "reports/analysis/suffix_sums.h"
#include "reports/analysis/timeline.h"

namespace memstage::reports {
namespace {

using trace::AllocatorStatsRecord;
using trace::CountersRecord;
using trace::Module;
using trace::ProcessInfo;

constexpr double kNsPerS = 1e9;
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

struct AllocatorSample {
  uint64_t t_ns;
  AllocatorStatsRecord stats;
  uint64_t live_bytes;
  uint64_t rss_bytes;
  uint64_t tracer_bytes;
};

// Pass one: everything but the stacks at the peaks.
// Counts the bytes of text and lists the analysis keeps from its traces, against
// AnalysisOptions::max_kept_text_bytes.
class KeptTextBudget {
 public:
  explicit KeptTextBudget(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  void charge(uint64_t bytes, const char* what) {
    kept_bytes_ += bytes;
    if (kept_bytes_ > max_bytes_)
      throw AnalysisLimitError(fmt::format("the traces describe more than {} MiB of {} (and other text) to keep: "
                                           "too large to analyse",
                                           max_bytes_ >> 20, what));
  }

 private:
  uint64_t max_bytes_;
  uint64_t kept_bytes_ = 0;
};

class FirstPass : public trace::TraceVisitor {
 public:
  explicit FirstPass(KeptTextBudget& budget) : budget_(budget) {}
  ProcessInfo info;
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
  std::optional<CountersRecord> last_counters;

  std::vector<std::vector<Module>> module_snapshots;
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
  // site, stage and the run's peak (the kAgg* records carry absolute figures).
  uint64_t agg_live_bytes = 0;
  std::unordered_map<uint64_t, trace::AggSiteRecord> agg_sites;  // by figure_key
  std::unordered_map<uint32_t, trace::AggStageRecord> agg_stages;
  std::vector<trace::AggPeakSiteRecord> agg_run_peak, agg_run_peak_pending;
  std::optional<trace::AggSnapshotRecord> agg_snapshot;
  std::optional<std::vector<trace::AggStackBytes>> agg_ram_limit_stacks;

  // Sample mode: the sampler's rate, the allocations sampled, and the exact live heap.
  uint64_t sample_rate_bytes = 0;
  uint64_t samples = 0;
  uint64_t counted_live_bytes = 0;

  int innermost() const { return stages.innermost(); }

  void on_process_info(const ProcessInfo& i) override {
    info = i;
    have_info = true;
  }
  void on_time(uint64_t t) override {
    now_ns = std::max(now_ns, t);
    if (replays_growth()) stack_live.tick(now_ns / kNsPerS, growth);
  }
  void on_modules(const std::vector<Module>& m) override {
    uint64_t bytes = 0;
    for (const Module& module : m) bytes += sizeof(Module) + module.path.size() + module.segments.size() * sizeof(trace::Segment);
    budget_.charge(bytes, "module lists");
    module_snapshots.push_back(m);
  }
  void on_stack_node(uint32_t id, uint32_t parent, uint64_t return_address) override {
    stacks.add_node(id, parent, return_address, static_cast<int>(module_snapshots.size()) - 1);
  }
  void on_stack(uint32_t id, std::span<const uint64_t> ips) override {
    stacks.add_stack(id, ips, static_cast<int>(module_snapshots.size()) - 1);
  }

  void reach(uint64_t live) {
    timeline.reach(live, events);
    peaks.reach_heap(live, now_ns, events);
    stages.reach_heap(live, now_ns, events);
  }

  void on_alloc_info(uint32_t id, uint64_t size, uint32_t stack, int32_t stage) override {
    heap.define(id, allocation_info(size, stack, stage, sample_rate_bytes));
  }

  void on_sampling(uint64_t rate_bytes) override { sample_rate_bytes = rate_bytes; }

  // Sample mode's heap figures: exact, counted on every call (on_alloc's are estimates).
  void on_heap_counters(uint64_t t, uint64_t live, uint64_t high) override {
    now_ns = std::max(now_ns, t);
    counted_live_bytes = live;
    reach(std::max(high, live));
  }

  void on_alloc(uint32_t info, bool) override {
    ++events;
    heap.allocate(info);
    const AllocationInfo& a = heap.info(info);
    const uint64_t size = a.size;
    const uint32_t stack = a.stack;
    const int stage = a.stage;
    sites.allocated(stack, stage, blocks_counted(a, 1), size);
    stack_live.add(stack, static_cast<int64_t>(size));
    if (sample_mode()) {
      // The totals and stage counts come from the tracer's counters (on_counters).
      ++samples;
      stages.allocated(stage, size, false);
      return;
    }
    ++allocations;
    bytes_allocated += size;
    stages.allocated(stage, size, true);
    reach(heap.live_bytes());
  }

  void on_free(uint32_t info, bool temporary) override {
    ++events;
    if (!heap.free(info)) {
      ++unknown_frees;
      return;
    }
    const AllocationInfo* block = &heap.info(info);
    if (!sample_mode()) ++frees;
    stack_live.add(block->stack, -static_cast<int64_t>(block->size));
    stages.freed(block->stage, block->size, temporary);
    if (temporary) sites.temporary(block->stack, block->stage);
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

  // Stats mode sees no allocation events: its heap is what the allocator counts in use.
  // Aggregate mode's is what the latest kAggHeap said. Sample mode sees a sample of the
  // events: its heap is what the tracer counted.
  uint64_t heap_now() const {
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
  // Each snapshot's sites feed growth over time: live bytes per stack at its moment.
  void on_agg_site(const trace::AggSiteRecord& r) override {
    trace::AggSiteRecord& site = agg_sites[figure_key(r.stack, r.stage)];
    stack_live.add(r.stack, static_cast<int64_t>(r.live_bytes) - static_cast<int64_t>(site.live_bytes));
    site = r;
  }
  void on_agg_stage(const trace::AggStageRecord& r) override { agg_stages[r.stage] = r; }
  void on_agg_peak_site(const trace::AggPeakSiteRecord& r) override { agg_run_peak_pending.push_back(r); }
  void on_agg_snapshot(const trace::AggSnapshotRecord& r) override {
    if (!agg_run_peak_pending.empty()) agg_run_peak = std::move(agg_run_peak_pending);
    agg_run_peak_pending.clear();
    agg_snapshot = r;
    stack_live.flush(r.t_ns / kNsPerS, growth);
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

  void on_allocator_stats(const AllocatorStatsRecord& r) override {
    now_ns = std::max(now_ns, r.t_ns);
    if (stats_mode()) {
      last_allocator = AllocatorSample{r.t_ns, r, r.in_use_bytes, last_rss_bytes, last_tracer_bytes};
      reach(r.in_use_bytes);
    }
    AllocatorSample sample{r.t_ns, r, heap_now(), last_rss_bytes, last_tracer_bytes};
    last_allocator = sample;
    allocator_samples.push_back(sample);
  }

  void on_counters(const CountersRecord& c) override {
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
    device.count_leaks();
    while (innermost() >= 0) close_innermost(false);
  }

 private:
  KeptTextBudget& budget_;
};

// Aggregate mode: the tracer recorded the stacks at the peaks itself.
StacksAtPeaks stacks_at_peaks_of_aggregate(const FirstPass& pass, size_t top_stacks) {
  StacksAtPeaks out;
  for (const auto& p : pass.agg_run_peak) {
    StackBytes& s = out.run_peak[figure_key(p.stack, p.stage)];
    s.stack = p.stack;
    s.bytes += p.bytes;
    s.blocks += p.blocks;
  }
  const auto listed = [&](const std::vector<trace::AggStackBytes>& stacks) {
    std::vector<StackBytes> top;
    for (const auto& s : stacks) {
      if (top.size() == top_stacks) break;
      top.push_back(StackBytes{s.stack, s.bytes, s.blocks});
    }
    return top;
  };
  for (const auto& [stage, r] : pass.agg_stages) {
    if (!r.top_stacks.empty()) out.stage_peaks[static_cast<int>(stage)] = listed(r.top_stacks);
  }
  if (pass.agg_ram_limit_stacks) out.stage_peaks[StacksAtPeaks::kRamLimit] = listed(*pass.agg_ram_limit_stacks);
  return out;
}

// Aggregate mode: the counts full mode takes from the events, from the latest snapshot
// and the sites' and stages' latest figures.
void apply_aggregate(FirstPass& pass) {
  if (pass.agg_snapshot) {
    pass.allocations = pass.agg_snapshot->allocations;
    pass.frees = pass.agg_snapshot->frees;
    pass.bytes_allocated = pass.agg_snapshot->bytes_allocated;
    pass.sites.set_temporary_allocations(pass.agg_snapshot->temporary_allocations);
  }
  for (const auto& [key, site] : pass.agg_sites) {
    pass.sites.set(site.stack, site.stage, site.allocations, site.bytes_allocated, site.temporary_allocations);
    if (site.stage >= 0 && static_cast<size_t>(site.stage) < pass.stages.instances.size()) {
      StageInstance& s = pass.stages.instances[site.stage];
      s.allocations += site.allocations;
      s.bytes_allocated += site.bytes_allocated;
      s.temporary_allocations += site.temporary_allocations;
    }
  }
  for (const auto& [stage, r] : pass.agg_stages) {
    if (stage >= pass.stages.instances.size()) continue;
    pass.stages.instances[stage].frees = r.frees;
    pass.stages.instances[stage].retained_bytes = r.retained_bytes;
  }
}

constexpr size_t kMaxLeakSites = 500;

Fragmentation fragmentation_of(const RssBreakdown& b) {
  Fragmentation f;
  f.estimated = b.estimated;
  const uint64_t resident = b.allocator_resident_bytes;
  f.ratio = resident == 0 ? 0.0 : 1.0 - static_cast<double>(b.live_bytes) / static_cast<double>(resident);
  if (f.ratio < 0) f.ratio = 0;
  return f;
}

// Without allocator figures: everything between live and RSS is unexplained.
RssBreakdown estimated_breakdown(uint64_t live, uint64_t rss, uint64_t tracer, double t_s) {
  RssBreakdown b;
  b.t_s = t_s;
  b.live_bytes = live;
  b.allocator_in_use_bytes = live;
  b.allocator_resident_bytes = std::max(live, rss > tracer ? rss - tracer : 0);
  b.rss_bytes = rss;
  b.tracer_bytes = tracer;
  b.estimated = true;
  return b;
}

struct TraceFile {
  explicit TraceFile(KeptTextBudget& budget) : pass(budget) {}
  std::string path;
  FirstPass pass;
  trace::ReadSummary summary;
};

// The job (report_model.h JobReport) from every process's first pass: its figures, and
// the event each process is to be replayed up to for the stacks held at the job's peak.
struct JobPlan {
  std::vector<size_t> order;  // files in Report::processes order: the main one first
  JobReport job;
  std::vector<double> start_s, end_s;
  std::vector<uint64_t> heap_at_peak_bytes;
  std::vector<uint64_t> event_at_peak;  // 0: nothing to replay
  std::vector<std::optional<uint64_t>> peak_pss_bytes, peak_uss_bytes;
};

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
    plan.job.clock_resolution_s = std::max(plan.job.clock_resolution_s, p.info.sample_interval_ns / kNsPerS);
    heap.push_back(std::move(h));
    rss.push_back(std::move(r));
    Series ps{offset_s, {}}, us{offset_s, {}};
    std::optional<uint64_t> peak_pss, peak_uss;
    for (const trace::MemorySharesRecord& s : p.shares) {
      ps.samples.push_back(Sample{offset_s + s.t_ns / kNsPerS, s.pss_bytes});
      us.samples.push_back(Sample{offset_s + s.t_ns / kNsPerS, s.private_bytes});
      peak_pss = std::max(peak_pss.value_or(0), s.pss_bytes);
      peak_uss = std::max(peak_uss.value_or(0), s.private_bytes);
    }
    // A process's PSS holds until its end, not only until its last (sparse) sample.
    if (!ps.samples.empty()) {
      any_shares = true;
      const double end_s = offset_s + p.now_ns / kNsPerS;
      if (end_s > ps.samples.back().t_s) {
        ps.samples.push_back(Sample{end_s, ps.samples.back().bytes});
        us.samples.push_back(Sample{end_s, us.samples.back().bytes});
      }
    }
    plan.peak_pss_bytes.push_back(peak_pss);
    plan.peak_uss_bytes.push_back(peak_uss);
    pss.push_back(std::move(ps));
    uss.push_back(std::move(us));
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
    plan.job.timeline = job_timeline(heap, rss, heap_sums, heap_peak, max_points);
    if (any_shares) {
      for (JobTimelinePoint& point : plan.job.timeline) {
        point.pss_bytes = 0;
        for (const Series& s : pss) *point.pss_bytes += value_at(s, point.t_s, Hold::kUntilNext);
      }
    }
  }
  return plan;
}

DeviceFigures device_stage_figures(const DeviceMemoryReplay::StageFigures& s) {
  DeviceFigures f;
  f.peak_bytes = s.peak_bytes;
  f.peak_time_s = s.peak_ns / kNsPerS;
  f.allocations = s.allocations;
  f.frees = s.frees;
  f.bytes_allocated = s.bytes_allocated;
  f.retained_bytes = s.retained_bytes;
  f.leaked_bytes = s.leaked_bytes;
  f.leaked_blocks = s.leaked_blocks;
  f.cache = s.cache;
  return f;
}

// Device blocks grouped by (stack, stage), largest first, stacks mapped into the report.
template <typename IndexOf>
std::vector<Leak> group_device_blocks(const std::vector<DeviceMemoryReplay::Block>& blocks, IndexOf index_of) {
  std::map<std::pair<uint32_t, int>, Leak> by_site;
  for (const auto& b : blocks) {
    Leak& l = by_site[{b.stack, b.stage}];
    l.bytes += b.bytes;
    ++l.blocks;
    l.stage = b.stage;
    l.stack = b.stack;
  }
  std::vector<Leak> out;
  for (auto& [site, l] : by_site) {
    l.stack = index_of(l.stack);
    out.push_back(l);
  }
  std::stable_sort(out.begin(), out.end(), [](const Leak& a, const Leak& b) { return a.bytes > b.bytes; });
  return out;
}

// The device timeline, at most max_points: each bucket keeps its highest point.
std::vector<DeviceTimelinePoint> bucket_device_timeline(const std::vector<DeviceTimelinePoint>& points,
                                                        size_t max_points) {
  if (points.size() <= max_points || points.empty()) return points;
  std::vector<DeviceTimelinePoint> out;
  const double t0 = points.front().t_s, t1 = points.back().t_s;
  size_t i = 0;
  for (size_t b = 0; b < max_points && i < points.size(); ++b) {
    const double end = t0 + (t1 - t0) * static_cast<double>(b + 1) / static_cast<double>(max_points);
    size_t highest = i;
    const size_t first = i;
    while (i < points.size() && (points[i].t_s <= end || b + 1 == max_points)) {
      if (points[i].bytes > points[highest].bytes) highest = i;
      ++i;
    }
    if (i != first) out.push_back(points[highest]);
  }
  return out;
}

DeviceReport device_report(const DeviceMemoryReplay& device, StackResolver& stacks, const StageRows& stage_rows,
                           size_t top_stacks, size_t max_timeline_points) {
  DeviceReport d;
  d.totals = device.totals(kNsPerS);
  auto index_of = [&](uint32_t stack) { return stacks.index_of(stack); };
  std::vector<DeviceMemoryReplay::Block> live = device.live_blocks();
  for (auto& b : live) b.stage = stage_rows.row_of(b.stage);
  d.leaks = group_device_blocks(live, index_of);
  // At the peak: by stack alone, whatever stage allocated.
  std::vector<DeviceMemoryReplay::Block> at_peak = device.at_peak();
  for (auto& b : at_peak) b.stage = -1;
  for (const Leak& l : group_device_blocks(at_peak, index_of)) {
    if (d.top_stacks_at_peak.size() == top_stacks) break;
    d.top_stacks_at_peak.push_back(StackBytes{l.stack, l.bytes, l.blocks});
  }
  d.timeline = bucket_device_timeline(device.timeline(), max_timeline_points);
  for (DeviceTimelinePoint& p : d.timeline) p.stage = stage_rows.row_of(p.stage);
  d.unknown_frees = device.unknown_frees();
  return d;
}

// A process whose memory barely goes through malloc (an allocator of its own, like
// Chromium's PartitionAlloc or Go's runtime, or Python's pymalloc arenas): the heap
// figures, stacks and leaks do not see it, and a near-zero heap must not read as "uses no
// memory".
void warn_if_outside_malloc(const TraceFile& f, std::vector<std::string>& warnings) {
  constexpr uint64_t kMinProgramRssBytes = 64ull << 20;
  const FirstPass& p = f.pass;
  if ((p.info.mode != trace::Mode::kFull && !p.aggregate_mode()) || p.peaks.program_rss_bytes < kMinProgramRssBytes) return;
  if (p.peaks.heap_bytes * 20 > p.peaks.program_rss_bytes) return;  // 5% or more through malloc
  std::string command = p.info.argv.empty() ? p.info.exe : p.info.argv[0];
  warnings.push_back(fmt::format(
      "{} (pid {}): only {:.1f} MiB of its {:.1f} MiB of RSS went through malloc: it allocates most of its "
      "memory another way (an allocator of its own{}); the heap figures, stacks and leaks do not see it{}",
      command, p.info.pid, p.peaks.heap_bytes / kBytesPerMiB, p.peaks.program_rss_bytes / kBytesPerMiB,
      p.python && p.python->allocator == "pymalloc" ? ", pymalloc's arenas: --python-allocator malloc shows them" : "",
      p.peaks.mmap_bytes ? fmt::format(" (anonymous mmap outside malloc peaked at {:.1f} MiB)", p.peaks.mmap_bytes / kBytesPerMiB)
                        : ""));
}

std::string rate_text(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

// Sample mode's growth: each rate's expected error is that of the bytes its stack grew by
// over its window, estimated from weighted samples like every other sampled figure.
void mark_growth_estimated(GrowthReport& growth, uint64_t rate_bytes) {
  for (GrowingStack& g : growth.stacks) {
    const double end_s = g.series.empty() ? g.since_s : g.series.back().t_s;
    g.relative_standard_error = trace::relative_standard_error(g.bytes_per_s * (end_s - g.since_s), rate_bytes);
  }
  growth.estimate_note = fmt::format(
      "sample mode: live bytes per stack over time are weighted samples (about one per {} allocated), so each "
      "growth rate is an estimate, off by about sqrt({} / the bytes its stack grew by) (one standard error, "
      "given with each rate)",
      rate_text(rate_bytes), rate_text(rate_bytes));
}

SamplingReport sampling_report(uint64_t rate_bytes, uint64_t samples) {
  const auto percent = [&](double bytes) { return 100 * trace::relative_standard_error(bytes, rate_bytes); };
  const std::string rate = rate_text(rate_bytes);
  return SamplingReport{
      rate_bytes, samples,
      fmt::format("sample mode: allocations were sampled about once per {} allocated ({} samples). Stacks, leaks, "
                  "sites and growth over time, their bytes, blocks and rates, are estimates: one of B bytes made of allocations under {} "
                  "is off by about sqrt({} / B) (one standard error: {:.0f}% at 1 MiB, {:.0f}% at 16 MiB, {:.0f}% at "
                  "256 MiB); allocations of {} or more are all recorded at their exact size. The heap peaks, of the "
                  "run and of each stage, and the counts of allocations, frees and bytes allocated are exact; "
                  "temporaries are not measured.",
                  rate, samples, rate, rate, percent(1 << 20), percent(16 << 20), percent(256 << 20), rate)};
}

}  // namespace

struct TraceBeingWritten::State {
  State(std::string trace_path, uint64_t max_kept_text_bytes)
      : path(std::move(trace_path)), budget(max_kept_text_bytes) {}
  std::string path;
  KeptTextBudget budget;  // the analysis it is handed to goes on charging it
  std::atomic<bool> writing{true};
  std::unique_ptr<TraceFile> file;  // once read; null when the file never appeared
  std::exception_ptr failed;
  std::jthread reader;  // last: the members above outlive it

  void read() {
    // The tracer creates the file as its process starts; one it never reaches (a
    // statically linked program) has none.
    for (std::error_code ec;;) {
      const bool still_writing = writing.load(std::memory_order_acquire);
      if (std::filesystem::exists(path, ec)) break;
      if (!still_writing) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    try {
      auto f = std::make_unique<TraceFile>(budget);
      f->path = path;
      const trace::FollowWriter follow{[this] { return writing.load(std::memory_order_acquire); }};
      f->summary = trace::read_trace(path, f->pass, {}, &follow);
      file = std::move(f);
    } catch (...) {
      failed = std::current_exception();
    }
  }

  // The pass over `trace_path` if it is this file (null otherwise, or when the file never
  // appeared): waits for the reader to finish it; what it threw, this throws.
  std::unique_ptr<TraceFile> take(const std::string& trace_path) {
    std::error_code ec;
    if (!std::filesystem::equivalent(trace_path, path, ec)) return nullptr;
    writing.store(false, std::memory_order_release);
    if (reader.joinable()) reader.join();
    if (failed) std::rethrow_exception(std::exchange(failed, nullptr));
    return std::move(file);
  }
};

TraceBeingWritten::TraceBeingWritten(std::string path, const AnalysisOptions& options)
    : state_(std::make_unique<State>(std::move(path), options.max_kept_text_bytes)) {
  state_->reader = std::jthread([state = state_.get()] { state->read(); });
}

TraceBeingWritten::~TraceBeingWritten() { writer_ended(); }  // State's reader joins

void TraceBeingWritten::writer_ended() { state_->writing.store(false, std::memory_order_release); }

std::vector<std::string> find_traces(const std::string& dir) {
  std::vector<std::pair<std::filesystem::file_time_type, std::string>> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("trace.") && name.ends_with(".mst")) {
      found.emplace_back(entry.last_write_time(), entry.path().string());
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<std::string> paths;
  for (auto& [time, path] : found) paths.push_back(path);
  return paths;
}

Report analyze(const std::vector<std::string>& trace_paths, const std::optional<RunInfo>& run,
               const AnalysisOptions& options, TraceBeingWritten* read_ahead) {
  if (trace_paths.empty()) throw std::runtime_error("no trace files to analyse");
  uint64_t total_bytes = 0;
  for (const auto& p : trace_paths) total_bytes += std::filesystem::file_size(p);
  // Each trace is read twice at most: progress counts both reads of the main one.
  uint64_t done_bytes = 0;
  auto progress_for = [&](uint64_t base) {
    return [&, base](uint64_t done, uint64_t) {
      if (options.progress) options.progress(base + done, total_bytes + total_bytes);
    };
  };

  // Of a run's several traces, one that is empty or ends before its process record (a
  // process killed at once, a full disk) is skipped with a warning: the others still
  // make a report. A single trace must be one.
  KeptTextBudget own_budget(options.max_kept_text_bytes);
  KeptTextBudget& kept_text = read_ahead ? read_ahead->state_->budget : own_budget;
  std::vector<std::unique_ptr<TraceFile>> files;
  std::vector<std::string> skipped;
  for (const auto& path : trace_paths) {
    std::unique_ptr<TraceFile> f;
    try {
      if (read_ahead) f = read_ahead->state_->take(path);
      if (!f) {
        f = std::make_unique<TraceFile>(kept_text);
        f->summary = trace::read_trace(path, f->pass, progress_for(done_bytes));
      }
      f->path = path;
    } catch (const trace::NotATraceError& e) {
      if (trace_paths.size() == 1) throw;
      skipped.push_back(std::string(e.what()) + ": skipped");
      continue;
    }
    f->pass.finish();
    if (f->pass.aggregate_mode()) apply_aggregate(f->pass);
    done_bytes += f->summary.file_bytes;
    if (!f->pass.have_info && trace_paths.size() > 1) {
      skipped.push_back(path + " holds no process record (it ends before its first chunk): skipped");
      continue;
    }
    files.push_back(std::move(f));
  }
  if (files.empty()) throw trace::NotATraceError("none of the traces could be read: " + skipped.front());
  // The traced command is the earliest process; if it exec'd, its last image is the
  // program the user meant (`memstage run -- env X=1 prog`).
  std::stable_sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return a->pass.info.start_realtime_ns < b->pass.info.start_realtime_ns;
  });
  size_t main_index = 0;
  for (size_t i = 1; i < files.size(); ++i) {
    // Same pid on the same host: the traced command exec'd (pids of other hosts may clash).
    if (files[i]->pass.info.pid == files[0]->pass.info.pid && files[i]->pass.place.host == files[0]->pass.place.host) {
      main_index = i;
    }
  }
  TraceFile& main = *files[main_index];
  FirstPass& pass = main.pass;
  if (!pass.have_info) throw trace::NotATraceError(main.path + " is not a memstage trace (no process record)");

  Report report;
  const bool sampled = pass.sample_mode();
  report.mode = pass.stats_mode() ? "stats" : pass.aggregate_mode() ? "aggregate" : sampled ? "sample" : "full";
  if (sampled) report.sampling = sampling_report(pass.sample_rate_bytes, pass.samples);
  report.allocator = pass.info.allocator.empty() ? "glibc" : pass.info.allocator;
  if (pass.python) report.python = PythonRun{pass.python->version, pass.python->allocator};
  report.leaks_measured = pass.info.mode == trace::Mode::kFull || pass.aggregate_mode() || sampled;
  if (pass.aggregate_mode()) {
    report.capture_notes.push_back(
        "aggregate mode: the tracer folded every allocation into figures per stack and stage in the process "
        "and wrote no events, so the figures are exact but nothing can be replayed: stacks are known at each "
        "stage's peak, at the run's peak and at exit only, and there is no per-allocation record (no event "
        "list in the Chrome trace, no allocation order)");
    if (!pass.ended && pass.agg_snapshot) {
      report.capture_notes.push_back(fmt::format(
          "the process did not end normally: counts, sites and leaks are as of its last snapshot, at {:.3f} s",
          pass.agg_snapshot->t_ns / kNsPerS));
    }
  }
  report.attached = pass.attached;
  // What memstage run saw (command, exit code) is about the process it started: a report
  // of another process's trace (a forked child) keeps that process's own.
  const bool run_is_this_process = run && (!run->pid || *run->pid == pass.info.pid);
  report.command = run_is_this_process ? run->command : pass.info.argv;
  if (run_is_this_process) report.exit_code = run->exit_code;
  report.signal = run_is_this_process && run->signal ? run->signal : pass.signal;
  report.duration_s = run_is_this_process && run->duration_s > 0 ? run->duration_s : pass.now_ns / kNsPerS;

  report.warnings = std::move(skipped);
  for (const auto& f : files) {
    if (f->summary.truncated) {
      report.warnings.push_back(f->path + " is truncated (" + f->summary.truncation +
                                "); reported up to there");
    } else if (!f->pass.ended && !f->pass.signal && !f->pass.replaced_by_exec()) {
      report.warnings.push_back(f->path + " has no end record: the process was killed; reported up to its last flush");
    }
    for (const std::string& module : f->pass.deep_bind_modules) {
      report.warnings.push_back(module + " was loaded with RTLD_DEEPBIND: the tracer removed the flag to see its "
                                "allocations, so its symbols bound as without it");
    }
  }
  if (pass.lost_events) report.warnings.push_back(std::to_string(pass.lost_events) + " events lost");
  for (const auto limit : {trace::StageLimit::kDistinctNames, trace::StageLimit::kDepth}) {
    const auto& dropped = pass.dropped_stage_begins[static_cast<size_t>(limit)];
    if (!dropped) continue;
    report.warnings.push_back(fmt::format(
        "{} {}: {} stage begins from {:.3f} s on were not recorded, nor their ends; what they allocated "
        "counts in the stage around them",
        limit == trace::StageLimit::kDepth ? "stages nested deeper than" : "more distinct stage names than",
        dropped->limit, dropped->begins, dropped->first_t_ns / kNsPerS));
  }

  JobPlan job = plan_job(files, main_index, options.max_timeline_points);

  // Stage paths, each distinct one once, and the rows the stage instances are reported in
  // (stage_rows.h): every figure keyed by stage below is keyed by row.
  const std::vector<StageInstance>& instances = pass.stages.instances;
  std::vector<uint32_t> instance_path(instances.size());
  std::vector<std::string> stage_paths;
  StageRows stage_rows([&] {
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> path_ids;  // (parent's path + 1 or 0, name) -> path
    std::vector<StageInstanceKey> keys(instances.size());
    for (size_t i = 0; i < instances.size(); ++i) {
      const StageInstance& s = instances[i];
      // A parent begins before its children: its path is known already.
      const uint32_t parent = s.parent >= 0 ? instance_path[s.parent] + 1 : 0;
      auto [it, added] = path_ids.try_emplace({parent, s.name_id}, static_cast<uint32_t>(stage_paths.size()));
      if (added) {
        const std::string& name = pass.stages.names[s.name_id];
        stage_paths.push_back(parent ? stage_paths[parent - 1] + '/' + name : name);
        kept_text.charge(name.size() + stage_paths.back().size(), "stage paths");
      }
      instance_path[i] = it->second;
      keys[i] = StageInstanceKey{it->second, s.peaks.heap_bytes};
    }
    return keys;
  }());

  // Pass two: stacks at the peaks.
  StacksAtPeaks at_peaks;
  PeakSnapshots snapshots([&] {
    std::vector<PeakSnapshots::Target> targets;
    if (job.event_at_peak[0]) targets.push_back({job.event_at_peak[0], PeakSnapshots::kJobPeak});
    if (pass.peaks.heap_event) targets.push_back({pass.peaks.heap_event, -1});
    for (size_t i = 0; i < instances.size(); ++i) {
      if (instances[i].peaks.heap_event && stage_rows.holds_row_peak(i)) {
        targets.push_back({instances[i].peaks.heap_event, static_cast<int>(i)});
      }
    }
    if (pass.ram_limit && pass.ram_limit_event) targets.push_back({pass.ram_limit_event, StacksAtPeaks::kRamLimit});
    return targets;
  }(), pass.heap.infos().size(), pass.events);
  snapshots.top_stacks = options.top_stacks;
  StackResolver stacks(pass.stacks, pass.module_snapshots, pass.python_codes, report, options.symbolize);
  if (pass.info.mode == trace::Mode::kFull || sampled) {
    // Pass two reads the trace again on a thread of its own while this one resolves the
    // stacks of every site, all the report will name (leaks and stacks at the peaks are
    // sites too): the two took about as long on a torch import's trace.
    std::exception_ptr pass_two_failed;
    {
      std::jthread pass_two([&] {
        try {
          trace::read_trace(main.path, snapshots, progress_for(total_bytes));
        } catch (...) {
          pass_two_failed = std::current_exception();
        }
      });
      for (const uint32_t stack : pass.sites.stacks()) stacks.index_of(stack);
    }
    if (pass_two_failed) std::rethrow_exception(pass_two_failed);
    at_peaks = std::move(static_cast<StacksAtPeaks&>(snapshots));
  } else if (pass.aggregate_mode()) {
    at_peaks = stacks_at_peaks_of_aggregate(pass, options.top_stacks);
  }

  // Totals.
  MemoryFigures& t = report.totals;
  pass.peaks.fill(t, kNsPerS);
  t.allocations = pass.allocations;
  t.frees = pass.frees;
  t.bytes_allocated = pass.bytes_allocated;
  t.temporary_allocations = pass.sites.temporary_allocations();
  // The allocator is asked at each new heap high, at stage edges, start and exit: the
  // run's breakdown is the sample taken at the highest heap (the nearest to the peak in
  // time among equals). One far below the peak (a program whose heap never grew enough
  // to be sampled) would describe another moment, its start or exit: the breakdown is
  // then estimated at the peak instead.
  const AllocatorSample* at_peak = nullptr;
  for (const auto& s : pass.allocator_samples) {
    const auto distance = [&](const AllocatorSample& x) {
      return x.t_ns > pass.peaks.heap_ns ? x.t_ns - pass.peaks.heap_ns : pass.peaks.heap_ns - x.t_ns;
    };
    if (!at_peak || s.live_bytes > at_peak->live_bytes ||
        (s.live_bytes == at_peak->live_bytes && distance(s) < distance(*at_peak))) {
      at_peak = &s;
    }
  }
  if (at_peak && at_peak->live_bytes * 2 >= pass.peaks.heap_bytes) {
    t.rss_breakdown = FirstPass::breakdown_from(*at_peak, at_peak->live_bytes);
  } else {
    t.rss_breakdown = estimated_breakdown(pass.peaks.heap_bytes, pass.peaks.rss_bytes, pass.last_tracer_bytes,
                                          t.peak_heap_time_s);
  }
  t.rss_breakdown.shares = resident_shares_at(pass.shares, t.rss_breakdown.t_s);
  t.fragmentation = fragmentation_of(t.rss_breakdown);

  // Leaks, grouped by stack and stage row, and per stage: the blocks live at the end, from
  // the events or from aggregate mode's sites.
  std::unordered_map<uint64_t, StackBytes> leaks_by_key;
  const auto count_leaked = [&](uint32_t stack, int stage, uint64_t bytes, uint64_t blocks) {
    t.leaked_bytes += bytes;
    t.leaked_blocks += blocks;
    StackBytes& l = leaks_by_key[figure_key(stack, stage_rows.row_of(stage))];
    l.stack = stack;
    l.bytes += bytes;
    l.blocks += blocks;
    pass.sites.leaked(stack, stage, bytes);
    pass.stages.leaked(stage, bytes, blocks);
  };
  for (size_t i = 0; i < pass.heap.infos().size(); ++i) {
    uint64_t blocks = pass.heap.live_blocks()[i];
    if (!blocks) continue;
    const AllocationInfo& block = pass.heap.infos()[i];
    count_leaked(block.stack, block.stage, blocks * block.size, blocks_counted(block, blocks));
  }
  for (const auto& [key, site] : pass.agg_sites) {
    if (site.live_blocks) count_leaked(site.stack, site.stage, site.live_bytes, site.live_blocks);
  }
  std::vector<std::pair<uint64_t, StackBytes>> leak_list(leaks_by_key.begin(), leaks_by_key.end());
  std::sort(leak_list.begin(), leak_list.end(), [](const auto& a, const auto& b) {
    return a.second.bytes != b.second.bytes ? a.second.bytes > b.second.bytes : a.first < b.first;
  });
  // The largest sites only: a Python program leaves tens of thousands of small ones at
  // exit (the interpreter frees little), which would make the report mostly stacks.
  // The totals and the per-stage figures still count every leaked block.
  uint64_t unlisted_bytes = 0, unlisted_sites = 0;
  for (const auto& [key, l] : leak_list) {
    if (report.leaks.size() == kMaxLeakSites) {
      unlisted_bytes += l.bytes;
      ++unlisted_sites;
      continue;
    }
    report.leaks.push_back(Leak{l.bytes, l.blocks, static_cast<int>(static_cast<uint32_t>(key)) - 1,
                                stacks.index_of(l.stack)});
  }
  if (unlisted_sites) {
    report.warnings.push_back(fmt::format("leaks: the {} largest sites are listed; {} smaller ones ({} bytes) are not",
                                          kMaxLeakSites, unlisted_sites, unlisted_bytes));
  }

  // Stages. Stats mode's counters are process-wide: a stage's own share is its span minus
  // its children's.
  const std::vector<CountersRecord> own_counters =
      pass.counts_from_counters() ? pass.stages.own_counters() : std::vector<CountersRecord>();
  for (size_t i = 0; i < instances.size(); ++i) {
    const StageInstance& s = instances[i];
    StageReport r;
    r.name = pass.stages.names[s.name_id];
    r.path = stage_paths[instance_path[i]];
    r.parent = s.parent;
    r.depth = s.depth;
    r.start_s = s.start_ns / kNsPerS;
    r.end_s = s.end_ns / kNsPerS;
    r.closed = s.closed;
    MemoryFigures& f = r.figures;
    s.peaks.fill(f, kNsPerS);
    if (pass.counts_from_counters()) {
      f.allocations = own_counters[i].allocations;
      f.frees = own_counters[i].frees;
      f.bytes_allocated = own_counters[i].bytes_allocated;
    }
    if (sampled) {
      // Estimated from the samples.
      f.leaked_bytes = s.leaked_bytes;
      f.leaked_blocks = s.leaked_blocks;
      r.retained_bytes = s.retained_bytes;
    } else if (!pass.counts_from_counters()) {
      f.allocations = s.allocations;
      f.frees = s.frees;
      f.bytes_allocated = s.bytes_allocated;
      f.temporary_allocations = s.temporary_allocations;
      f.leaked_bytes = s.leaked_bytes;
      f.leaked_blocks = s.leaked_blocks;
      r.retained_bytes = s.retained_bytes;
    }
    f.rss_breakdown = s.has_breakdown ? s.breakdown
                                      : estimated_breakdown(s.peaks.heap_bytes, s.peaks.rss_bytes, pass.last_tracer_bytes,
                                                            s.peaks.heap_ns / kNsPerS);
    f.rss_breakdown.shares = resident_shares_at(pass.shares, f.rss_breakdown.t_s);
    f.fragmentation = fragmentation_of(f.rss_breakdown);
    // Only the instance whose peak its row reports needs its stacks.
    const auto it = at_peaks.stage_peaks.find(static_cast<int>(i));
    if (it != at_peaks.stage_peaks.end() && stage_rows.holds_row_peak(i)) {
      for (const StackBytes& sb : it->second) {
        r.top_stacks_at_peak.push_back(StackBytes{stacks.index_of(sb.stack), sb.bytes, sb.blocks});
      }
    }
    if (pass.device.used()) r.device = device_stage_figures(pass.device.stages()[i]);
    stage_rows.add(i, std::move(r));
  }
  report.stages = stage_rows.take_rows();
  report.stage_grouping = stage_rows.grouping();
  if (pass.device.used()) {
    report.device = device_report(pass.device, stacks, stage_rows, options.top_stacks, options.max_timeline_points);
    if (report.device->unknown_frees) {
      report.warnings.push_back(fmt::format("device: {} frees of blocks the trace never saw allocated",
                                            report.device->unknown_frees));
    }
  }

  // Per stack and stage row figures, with the bytes live at the run's peak.
  for (const auto& [key, live] : at_peaks.run_peak) pass.sites.live_at_peak(live.stack, stage_of_key(key), live.bytes);
  std::unordered_map<uint32_t, StackBytes> run_peak_by_stack;
  report.stack_figures = pass.sites.by_row([&](int stage) { return stage_rows.row_of(stage); });
  report.stacks.reserve(report.stacks.size() + report.stack_figures.size());
  for (StackStageFigures& f : report.stack_figures) {
    if (f.live_at_peak_bytes) {
      StackBytes& sb = run_peak_by_stack[f.stack];
      sb.stack = f.stack;
      sb.bytes += f.live_at_peak_bytes;
    }
    f.stack = stacks.index_of(f.stack);
  }
  for (const auto& [key, live] : at_peaks.run_peak) run_peak_by_stack[live.stack].blocks += live.blocks;
  std::vector<StackBytes> run_top;
  for (const auto& [stack, sb] : run_peak_by_stack) run_top.push_back(sb);
  std::sort(run_top.begin(), run_top.end(), [](const StackBytes& a, const StackBytes& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  });
  if (run_top.size() > options.top_stacks) run_top.resize(options.top_stacks);
  for (StackBytes& sb : run_top) sb.stack = stacks.index_of(sb.stack);
  report.top_stacks_at_peak = std::move(run_top);

  if (pass.replays_growth() || pass.aggregate_mode()) {
    report.growth = pass.growth.report([&](uint32_t stack) { return stacks.index_of(stack); });
    if (sampled) mark_growth_estimated(*report.growth, pass.sample_rate_bytes);
  }

  if (pass.ram_limit) {
    report.ram_limit = pass.ram_limit;
    report.ram_limit->stage = stage_rows.row_of(pass.ram_limit->stage);
    const int stage = report.ram_limit->stage;
    const double limit = static_cast<double>(pass.ram_limit->limit_bytes);
    report.warnings.push_back(fmt::format("would not fit in {}: RSS passed it {}after {:.1f} s",
                                          limit >= (1ull << 30) ? fmt::format("{:.1f} GiB", limit / (1ull << 30))
                                                                : fmt::format("{:.0f} MiB", limit / (1ull << 20)),
                                          stage >= 0 ? "at stage " + report.stages[stage].path + " " : "",
                                          pass.ram_limit->t_s));
    if (auto it = at_peaks.stage_peaks.find(StacksAtPeaks::kRamLimit); it != at_peaks.stage_peaks.end()) {
      for (const StackBytes& sb : it->second) {
        report.ram_limit->top_stacks.push_back(StackBytes{stacks.index_of(sb.stack), sb.bytes, sb.blocks});
      }
    }
  }

  report.timeline = pass.timeline.report(options.max_timeline_points, t.peak_heap_time_s, t.peak_heap_bytes);
  for (TimelinePoint& p : report.timeline) p.stage = stage_rows.row_of(p.stage);

  const auto process_report = [&](const FirstPass& p) {
    ProcessReport r;
    r.pid = p.info.pid;
    r.parent_pid = p.info.parent_pid;
    r.command = p.info.argv;
    r.peak_heap_bytes = p.peaks.heap_bytes;
    r.peak_rss_bytes = p.peaks.rss_bytes;
    r.complete = p.ended;
    r.signal = p.signal;
    if (p.ended) {
      r.ended = "exit";
    } else if (p.signal) {
      r.ended = "signal";
    } else if (p.replaced_by_exec()) {
      r.ended = "exec";
      r.exec_path = *p.exec_path;
    } else {
      r.ended = "unknown";
    }
    return r;
  };
  // In the job's order: the process memstage started first.
  for (size_t n = 0; n < job.order.size(); ++n) {
    const FirstPass& p = files[job.order[n]]->pass;
    ProcessReport process = process_report(p);
    process.start_s = job.start_s[n];
    process.end_s = job.end_s[n];
    process.heap_at_job_peak_bytes = job.heap_at_peak_bytes[n];
    process.peak_pss_bytes = job.peak_pss_bytes[n];
    process.peak_uss_bytes = job.peak_uss_bytes[n];
    process.host = p.place.host;
    process.rank = p.place.rank;
    process.local_rank = p.place.local_rank;
    process.world_size = p.place.world_size;
    report.processes.push_back(std::move(process));
  }
  report.processes.front().exit_code = report.exit_code;
  for (size_t i = 0; i < files.size(); ++i) warn_if_outside_malloc(*files[i], report.warnings);

  // The stacks held at the job's peak, in every process that held heap then.
  report.job = std::move(job.job);
  std::vector<JobStack>& job_stacks = report.job.top_stacks_at_peak;
  if (auto it = at_peaks.stage_peaks.find(StacksAtPeaks::kJobPeak); it != at_peaks.stage_peaks.end()) {
    for (const StackBytes& sb : it->second) {
      job_stacks.push_back(JobStack{0, StackBytes{stacks.index_of(sb.stack), sb.bytes, sb.blocks}});
    }
  }
  for (size_t n = 1; n < job.order.size(); ++n) {
    if (!job.event_at_peak[n]) continue;
    TraceFile& file = *files[job.order[n]];
    PeakSnapshots held({{job.event_at_peak[n], PeakSnapshots::kJobPeak}}, file.pass.heap.infos().size(),
                       file.pass.events);
    held.top_stacks = options.top_stacks;
    trace::read_trace(file.path, held);
    StackResolver resolver(file.pass.stacks, file.pass.module_snapshots, file.pass.python_codes, report,
                           options.symbolize);
    for (const StackBytes& sb : held.stage_peaks[PeakSnapshots::kJobPeak]) {
      job_stacks.push_back(JobStack{n, StackBytes{resolver.index_of(sb.stack), sb.bytes, sb.blocks}});
    }
  }
  std::stable_sort(job_stacks.begin(), job_stacks.end(),
                   [](const JobStack& a, const JobStack& b) { return a.held.bytes > b.held.bytes; });
  if (job_stacks.size() > options.top_stacks) job_stacks.resize(options.top_stacks);
  return report;
}

}  // namespace memstage::reports
