#include "reports/analysis/analyzer.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/aggregate_capture.h"
#include "reports/analysis/device_report.h"
#include "reports/analysis/first_pass.h"
#include "reports/analysis/job_plan.h"
#include "reports/analysis/peak_snapshots.h"
#include "reports/analysis/report_so_far.h"
#include "reports/analysis/resident_shares.h"
#include "reports/analysis/runtime_leaks.h"
#include "reports/analysis/stack_resolver.h"
#include "reports/analysis/stacks_so_far.h"
#include "reports/analysis/stage_rows.h"
#include "reports/analysis/suffix_sums.h"

namespace memstage::reports {
namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

constexpr size_t kMaxLeakSites = 500;

// Pass two over one trace: its events replayed into `snapshots` from pass one's log of
// them (over pass one's infos, lent meanwhile: nothing else may read `file`'s heap until
// it returns), or, past the log's bound, read from the file again.
void replay_events(TraceFile& file, PeakSnapshots& snapshots,
                   const std::function<void(uint64_t, uint64_t)>& progress) {
  if (!file.pass.event_log.complete()) {
    trace::read_trace(file.path, snapshots, progress);
  } else {
    snapshots.borrow_infos(file.pass.heap);
    file.pass.event_log.replay(snapshots);
    snapshots.give_back_infos();
    if (progress) progress(file.summary.file_bytes, file.summary.file_bytes);
  }
  // Each trace is replayed once: its log and the replay's counts are not held beside the
  // stack resolution still running.
  file.pass.event_log = EventLog();
  snapshots.let_go_of_replay();
}

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

// The heap a forked child inherited, in full and aggregate modes (which count a child's heap
// from zero at the fork): its parent's live heap at the child's start. 0 for an exec'd image
// (a trace of the same pid replaced by it: it starts with nothing) and an untraced parent.
uint64_t inherited_heap_bytes(const std::vector<std::unique_ptr<TraceFile>>& files, const TraceFile& child) {
  const FirstPass& c = child.pass;
  const FirstPass* parent = nullptr;
  for (const auto& f : files) {
    const FirstPass& p = f->pass;
    if (p.info.pid == c.info.pid && p.replaced_by_exec() && p.info.start_realtime_ns <= c.info.start_realtime_ns) return 0;
    if (p.info.pid == c.info.parent_pid && p.info.start_realtime_ns <= c.info.start_realtime_ns) parent = &p;
  }
  if (!parent) return 0;
  const double at_s = static_cast<double>(c.info.start_realtime_ns - parent->info.start_realtime_ns) / kNsPerS;
  uint64_t heap = 0;
  for (const TimelinePoint& point : parent->timeline.points()) {
    if (point.t_s > at_s) break;
    heap = point.heap_bytes;
  }
  return heap;
}

// Stats and sample modes count a forked child's heap from the fork as every mode does, and
// leave out its frees of inherited blocks by a table of the blocks it allocated itself; an
// older tracer kept none (sample mode knew its sampled blocks only), and a table out of
// memory gives up (kInheritedFreesUntold). Said once a run where either happened.
void note_inherited_frees(const TraceFile& child, uint64_t inherited, Report& report) {
  const FirstPass& pass = child.pass;
  if (!inherited || !pass.counts_from_counters()) return;
  const bool older = child.summary.version < trace::kFirstVersionTellingInheritedFrees;
  if (!older && !pass.inherited_frees_untold) return;
  const std::string why = older ? fmt::format("its tracer (trace format {}) keeps no table of them", child.summary.version)
                                : "its table of its own blocks ran out of memory";
  const std::string note = fmt::format(
      "{} mode: a forked child's heap counts from the fork (what it inherited is its parent's), but {} could not "
      "tell all of its frees of inherited blocks from frees of its own ({}{}): a child that freed some of what it "
      "inherited reads that much low, at most what it inherited",
      pass.stats_mode() ? "stats" : "sample", older ? "this trace" : "a child", why,
      pass.sample_mode() && older ? "; sampled blocks, all of the sampling rate or more, excepted" : "");
  for (const std::string& n : report.capture_notes) {
    if (n == note) return;
  }
  report.capture_notes.push_back(note);
}

// A process whose memory barely goes through malloc (an allocator of its own, like
// Chromium's PartitionAlloc or Go's runtime, or Python's pymalloc arenas): the heap
// figures, stacks and leaks do not see it, and a near-zero heap must not read as "uses no
// memory". A forked child's RSS holds the heap it inherited (its parent's blocks, on
// shared pages): that went through malloc too, in the parent.
void warn_if_outside_malloc(const TraceFile& f, uint64_t inherited, std::vector<std::string>& warnings) {
  constexpr uint64_t kMinProgramRssBytes = 64ull << 20;
  const FirstPass& p = f.pass;
  if ((p.info.mode != trace::Mode::kFull && !p.aggregate_mode()) || p.peaks.program_rss_bytes < kMinProgramRssBytes) return;
  if ((p.peaks.heap_bytes + inherited) * 20 > p.peaks.program_rss_bytes) return;  // 5% or more through malloc
  std::string command = p.info.argv.empty() ? p.info.exe : p.info.argv[0];
  warnings.push_back(fmt::format(
      "{} (pid {}): only {:.1f} MiB of its {:.1f} MiB of RSS went through malloc{}: it allocates most of its "
      "memory another way (an allocator of its own{}); the heap figures, stacks and leaks do not see it{}",
      command, p.info.pid, p.peaks.heap_bytes / kBytesPerMiB, p.peaks.program_rss_bytes / kBytesPerMiB,
      inherited ? fmt::format(" (and {:.1f} MiB inherited from its parent's heap)", inherited / kBytesPerMiB) : "",
      p.python && p.python->allocator == "pymalloc" ? ", pymalloc's arenas: --python-allocator malloc shows them" : "",
      p.peaks.mmap_bytes ? fmt::format(" (anonymous mmap outside malloc peaked at {:.1f} MiB)", p.peaks.mmap_bytes / kBytesPerMiB)
                        : ""));
}

// Leaks, grouped by stack and stage row, and per stage: the blocks live at the end, from
// the events or from aggregate mode's sites. What the runtime holds for the process's life
// is counted apart, in neither the totals' nor the stages' leaked figures. The main
// process's heap is done with after this (pass two has replayed it; the job's replays are
// of the other processes): 32 MiB on a torch import's trace.
std::vector<Leak> count_leaks(FirstPass& pass, StackResolver& stacks, const StageRows& stage_rows,
                              RuntimeLeaks& runtime_leaks, Report& report) {
  MemoryFigures& t = report.totals;
  std::unordered_map<uint64_t, StackBytes> leaks_by_key;
  const auto count_leaked = [&](uint32_t stack, int stage, uint64_t bytes, uint64_t blocks) {
    if (runtime_leaks.is_runtime(stacks.index_of(stack))) {
      report.runtime_held.bytes += bytes;
      report.runtime_held.blocks += blocks;
    } else {
      t.leaked_bytes += bytes;
      t.leaked_blocks += blocks;
      pass.stages.leaked(stage, bytes, blocks);
    }
    StackBytes& l = leaks_by_key[figure_key(stack, stage_rows.row_of(stage))];
    l.stack = stack;
    l.bytes += bytes;
    l.blocks += blocks;
    pass.sites.leaked(stack, stage, bytes);
  };
  pass.for_each_held(count_leaked);
  pass.heap = LiveHeap();
  std::vector<Leak> leaks;
  leaks.reserve(leaks_by_key.size());
  for (const auto& [key, l] : leaks_by_key) {
    const StackIndex stack = stacks.index_of(l.stack);
    leaks.push_back(Leak{l.bytes, l.blocks, static_cast<int>(static_cast<uint32_t>(key)) - 1, stack,
                         runtime_leaks.is_runtime(stack)});
  }
  return leaks;
}

// The program's leaks first, largest first, then the runtime's; the largest sites only: a
// Python program leaves tens of thousands of small ones at exit (the interpreter frees
// little), which would make the report mostly stacks. The totals and the per-stage figures
// still count every leaked block.
void list_leaks(std::vector<Leak> leaks, Report& report) {
  std::sort(leaks.begin(), leaks.end(), [](const Leak& a, const Leak& b) {
    if (a.runtime != b.runtime) return b.runtime;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.stack != b.stack ? a.stack < b.stack : a.stage < b.stage;
  });
  uint64_t unlisted_bytes = 0, unlisted_sites = 0;
  for (const Leak& leak : leaks) {
    if (report.leaks.size() == kMaxLeakSites) {
      unlisted_bytes += leak.bytes;
      ++unlisted_sites;
      continue;
    }
    report.leaks.push_back(leak);
  }
  if (unlisted_sites) {
    report.warnings.push_back(fmt::format("leaks: the {} largest sites are listed; {} smaller ones ({} bytes) are not",
                                          kMaxLeakSites, unlisted_sites, unlisted_bytes));
  }
}

// A process replaced by exec whose new image left no trace (its pid never starts again): the
// program re-exec'd without LD_PRELOAD in its environment, or a static or setuid one.
void warn_of_untraced_execs(Report& report) {
  for (const ProcessReport& p : report.processes) {
    if (p.ended != "exec") continue;
    const bool traced = std::any_of(report.processes.begin(), report.processes.end(), [&](const ProcessReport& q) {
      return &q != &p && q.pid == p.pid && q.start_s >= p.start_s;
    });
    if (!traced) {
      report.warnings.push_back(fmt::format(
          "pid {} exec'd {}, which left no trace: its environment lost LD_PRELOAD (or the program is static or "
          "setuid), so what it allocated is not in this report",
          p.pid, p.exec_path));
    }
  }
}

// Symbols come from each module's file where the trace names it, read now: a file changed
// after the traced processes ended is not the one they ran (a library rebuilt since), and
// the names and lines of its frames may be wrong. The trace keeps no build id to tell; a
// file's change time later than the run's end (plus the file system's time granularity)
// is what says so.
void warn_of_modules_changed_since(const std::vector<std::unique_ptr<TraceFile>>& files, Report& report) {
  constexpr uint64_t kTimeGranularityNs = 2'000'000'000;
  uint64_t ended_ns = 0;
  for (const auto& f : files) ended_ns = std::max(ended_ns, f->pass.info.start_realtime_ns + f->pass.now_ns);
  std::set<std::string> modules;
  // Allocation plumbing (the allocator, the tracer's own entry points) is left out: a
  // memstage or allocator upgrade between the run and the report does not move the
  // program's frames.
  for (const Frame& frame : report.frames) {
    if (frame.kind == "native" && !frame.allocator && !frame.module.empty()) modules.insert(frame.module);
  }
  std::vector<std::string> changed;
  for (const std::string& module : modules) {
    struct stat st {};
    if (stat(module.c_str(), &st) != 0) continue;
    const uint64_t changed_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (changed_ns > ended_ns + kTimeGranularityNs) changed.push_back(module);
  }
  if (changed.empty()) return;
  std::string named = changed.front();
  for (size_t i = 1; i < std::min<size_t>(changed.size(), 3); ++i) named += ", " + changed[i];
  if (changed.size() > 3) named += fmt::format(" and {} more", changed.size() - 3);
  report.warnings.push_back(fmt::format("{} changed after the trace was recorded (rebuilt?): the function names and lines "
                                 "of {} frames are read from the file as it is now and may be wrong",
                                        named, changed.size() == 1 ? "its" : "their"));
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

std::vector<std::string> find_traces(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("trace.") && name.ends_with(".mst")) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

namespace {

// AnalysisOptions::progress, told of several reads at once, one call at a time: the bytes
// of every read so far.
class ReadProgress {
 public:
  ReadProgress(const std::function<void(uint64_t, uint64_t)>& report, uint64_t total_bytes)
      : report_(report), total_bytes_(total_bytes) {}
  // For one read of a file, whose (bytes done, bytes in all) it is called with.
  std::function<void(uint64_t, uint64_t)> of_file() {
    if (!report_) return {};
    return [this, last = uint64_t{0}](uint64_t done, uint64_t) mutable {
      std::lock_guard lock(mutex_);
      done_bytes_ += done - last;
      last = done;
      report_(done_bytes_, total_bytes_);
    };
  }

 private:
  const std::function<void(uint64_t, uint64_t)>& report_;
  const uint64_t total_bytes_;
  std::mutex mutex_;
  uint64_t done_bytes_ = 0;
};

// Calls task(0) ... task(count - 1), several at once on up to a thread a core: a job's
// processes (workers, ranks, the programs a launcher ran) leave several traces of a size,
// each read and replayed apart.
void run_at_once(size_t count, const std::function<void(size_t)>& task) {
  std::atomic<size_t> next{0};
  const auto run_some = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) task(i);
  };
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const size_t cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? static_cast<size_t>(CPU_COUNT(&cpus)) : 1;
  std::vector<std::jthread> helpers;
  for (size_t t = 1; t < std::min(cores, count); ++t) helpers.emplace_back(run_some);
  run_some();
}

// Pass one of every trace not read already (`read[i]` and `failed[i]` null). What a read
// throws is kept in `failed[i]`, for the caller to say in the traces' order.
void read_at_once(const std::vector<std::string>& paths, KeptTextBudget& kept_text, size_t max_event_log_bytes,
                  ReadProgress& progress, std::vector<std::unique_ptr<TraceFile>>& read,
                  std::vector<std::exception_ptr>& failed) {
  std::vector<size_t> to_read;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!read[i] && !failed[i]) to_read.push_back(i);
  }
  run_at_once(to_read.size(), [&](size_t n) {
    const size_t i = to_read[n];
    try {
      auto f = std::make_unique<TraceFile>(kept_text, max_event_log_bytes);
      f->summary = trace::read_trace(paths[i], f->pass, progress.of_file());
      read[i] = std::move(f);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  });
}

// The damaged chunks a trace's reader skipped, and what was lost with them, in words.
std::string damaged_trace_note(const std::string& path, const trace::DamageLoss& damage) {
  std::string spans;
  for (const trace::DamagedSpan& span : damage.spans) {
    spans += spans.empty() ? "" : ", ";
    spans += span.bytes ? fmt::format("{} bytes at byte {} ({})", span.bytes, span.offset, span.why)
                        : fmt::format("the records before the chunk at byte {} ({})", span.offset, span.why);
  }
  return fmt::format(
      "{} is damaged: {} could not be read and {} skipped to the next good chunk, the rest read on; lost with "
      "them: {} stack nodes, {} allocation infos, {} stage names and {} stage instances (shown as \"{}\"), and {} "
      "later allocations and frees of their blocks (left out); a block freed in them counts as live after",
      path, spans, damage.spans.size() == 1 ? "was" : "were", damage.stack_nodes, damage.alloc_infos,
      damage.stage_names, damage.stage_instances, trace::kLostInDamagedChunk, damage.events_left_out);
}

}  // namespace

// The OOM killer's work in words, for every renderer: which limit, how many processes.
std::string oom_kill_note(const OomKill& oom) {
  const std::string limit =
      oom.limit_bytes ? fmt::format("{:.1f} MiB", static_cast<double>(*oom.limit_bytes) / 1048576.0) : "no limit of its own";
  return fmt::format("the kernel's OOM killer killed {} process{} of this run: cgroup v{} {} hit its memory limit ({}); "
                     "a killed process is reported up to its last record",
                     oom.processes_killed, oom.processes_killed == 1 ? "" : "es", oom.cgroup_version, oom.cgroup, limit);
}

namespace {

// A process SIGKILLed (the OOM killer's among them) never wrote the kernel's high-water
// mark of its RSS: memstage run's wait4 ru_maxrss (run.json) stands for it, in the trace
// of the process it started that no exec replaced. It counts the children that process
// waited for too, so it is taken only where no other process was traced.
void apply_rss_at_death(std::vector<std::unique_ptr<TraceFile>>& read, const std::optional<RunInfo>& run) {
  if (!run || !run->pid || !run->max_rss_bytes) return;
  for (const auto& f : read) {
    if (f && f->pass.have_info && f->pass.info.pid != *run->pid) return;
  }
  for (auto& f : read) {
    if (f && f->pass.have_info && !f->pass.ended && !f->pass.replaced_by_exec()) {
      f->pass.on_rss_high_water(0, *run->max_rss_bytes);  // when it came is unknown
    }
  }
}

// The traces that make the report, in the order their processes started, and the main one.
struct Traces {
  std::vector<std::unique_ptr<TraceFile>> files;
  size_t main_index = 0;              // the traced command: the earliest process's last image
  std::vector<std::string> skipped;   // why a trace was left out, as warnings
  TraceFile& main() { return *files[main_index]; }
};

// Step "read": pass one of every trace, at once (those the read-ahead followed taken from
// it). Of a run's several traces, one that is empty or ends before its process record (a
// process killed at once, a full disk) is skipped with a warning: the others still make a
// report. A single trace must be one.
Traces read_traces(const std::vector<std::string>& trace_paths, const std::optional<RunInfo>& run,
                   KeptTextBudget& kept_text, size_t max_event_log_bytes, ReadProgress& progress,
                   const std::function<std::unique_ptr<TraceFile>(const std::string&)>& take_read_ahead,
                   const std::function<void()>& return_freed_pages) {
  std::vector<std::unique_ptr<TraceFile>> read(trace_paths.size());
  std::vector<std::exception_ptr> read_failed(trace_paths.size());
  for (size_t i = 0; take_read_ahead && i < trace_paths.size(); ++i) {
    try {
      read[i] = take_read_ahead(trace_paths[i]);
    } catch (...) {
      read_failed[i] = std::current_exception();
    }
  }
  read_at_once(trace_paths, kept_text, max_event_log_bytes, progress, read, read_failed);
  // The readers' tables by stack node are freed: their pages go back before each pass's
  // end makes its lists anew.
  if (return_freed_pages) return_freed_pages();
  apply_rss_at_death(read, run);
  Traces traces;
  for (size_t i = 0; i < trace_paths.size(); ++i) {
    const std::string& path = trace_paths[i];
    if (read_failed[i]) {
      try {
        std::rethrow_exception(read_failed[i]);
      } catch (const trace::NotATraceError& e) {
        if (trace_paths.size() == 1) throw;
        traces.skipped.push_back(std::string(e.what()) + ": skipped");
        continue;
      }
    }
    std::unique_ptr<TraceFile> f = std::move(read[i]);
    f->path = path;
    f->pass.finish();
    if (f->pass.aggregate_mode()) apply_aggregate(f->pass);
    if (!f->pass.have_info && trace_paths.size() > 1) {
      traces.skipped.push_back(path + " holds no process record (it ends before its first chunk): skipped");
      continue;
    }
    traces.files.push_back(std::move(f));
  }
  if (traces.files.empty()) throw trace::NotATraceError("none of the traces could be read: " + traces.skipped.front());
  return traces;
}

// Orders the traces by their processes' start and returns the traced command's: the
// earliest process, or if it exec'd, its last image, the program the user meant
// (`memstage run -- env X=1 prog`).
template <typename File>
size_t order_and_find_main(std::vector<File>& files) {
  std::stable_sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return a->pass.info.start_realtime_ns < b->pass.info.start_realtime_ns;
  });
  size_t main = 0;
  for (size_t i = 1; i < files.size(); ++i) {
    // Same pid on the same host: the traced command exec'd (pids of other hosts may clash).
    if (files[i]->pass.info.pid == files[0]->pass.info.pid && files[i]->pass.place.host == files[0]->pass.place.host) {
      main = i;
    }
  }
  return main;
}

void find_main_trace(Traces& traces) {
  traces.main_index = order_and_find_main(traces.files);
  if (!traces.main().pass.have_info) {
    throw trace::NotATraceError(traces.main().path + " is not a memstage trace (no process record)");
  }
}

// Step "run": what was run and how it was recorded, from the main trace and memstage run.
Report describe_run(const FirstPass& pass, const std::optional<RunInfo>& run) {
  Report report;
  const bool sampled = pass.sample_mode();
  report.mode = trace::mode_name(pass.info.mode);
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
  return report;
}

// Step "warnings": what the reading found (traces skipped, cut short or killed, events and
// stage begins lost) and the OOM killer's work.
void add_read_warnings(Traces& traces, const std::optional<RunInfo>& run, Report& report) {
  const FirstPass& pass = traces.main().pass;
  report.warnings = std::move(traces.skipped);
  if (run && run->oom_kill) {
    report.oom_kill = run->oom_kill;
    report.warnings.push_back(oom_kill_note(*run->oom_kill));
  }
  for (const auto& f : traces.files) {
    if (!f->summary.damage.spans.empty()) report.warnings.push_back(damaged_trace_note(f->path, f->summary.damage));
    if (f->summary.truncated) {
      report.warnings.push_back(f->path + " is truncated (" + f->summary.truncation + "); reported up to there");
    } else if (!f->pass.ended && !f->pass.signal && !f->pass.replaced_by_exec()) {
      report.warnings.push_back(f->path + " has no end record: the process was killed; reported up to its last flush");
    }
    for (const std::string& module : f->pass.deep_bind_modules) {
      report.warnings.push_back(module + " was loaded with RTLD_DEEPBIND: the tracer removed the flag to see its "
                                "allocations, so its symbols bound as without it");
    }
  }
  report.lost_events = pass.lost_events;
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
}

// The stage paths, each distinct one once, and each stage instance's.
struct StagePaths {
  std::vector<std::string> paths;
  std::vector<uint32_t> of_instance;
  const std::string& of(size_t instance) const { return paths[of_instance[instance]]; }
};

// Step "stage rows": each instance's path and key, from which StageRows groups the
// instances into the rows they are reported in (stage_rows.h): every figure keyed by stage
// after this step is keyed by row.
std::vector<StageInstanceKey> stage_keys(const FirstPass& pass, KeptTextBudget& kept_text, StagePaths& stage_paths) {
  const std::vector<StageInstance>& instances = pass.stages.instances;
  std::vector<std::string>& paths = stage_paths.paths;
  std::vector<uint32_t>& instance_path = stage_paths.of_instance;
  instance_path.resize(instances.size());
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> path_ids;  // (parent's path + 1 or 0, name) -> path
  std::vector<StageInstanceKey> keys(instances.size());
  for (size_t i = 0; i < instances.size(); ++i) {
    const StageInstance& s = instances[i];
    // A parent begins before its children: its path is known already.
    const uint32_t parent = s.parent >= 0 ? instance_path[s.parent] + 1 : 0;
    auto [it, added] = path_ids.try_emplace({parent, s.name_id}, static_cast<uint32_t>(paths.size()));
    if (added) {
      const std::string& name = pass.stages.names[s.name_id];
      paths.push_back(parent ? paths[parent - 1] + '/' + name : name);
      kept_text.charge(name.size() + paths.back().size(), "stage paths");
    }
    instance_path[i] = it->second;
    keys[i] = StageInstanceKey{it->second, s.peaks.heap_bytes};
  }
  return keys;
}

// The moments pass two takes the stacks at: the job's peak, the run's, each row's peak, and
// when RSS passed --ram-limit.
std::vector<PeakSnapshots::Target> peak_targets(const FirstPass& pass, const JobPlan& job, const StageRows& stage_rows) {
  const std::vector<StageInstance>& instances = pass.stages.instances;
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
}

// Aggregate mode's stacks the steps after pass two name, ascending: every site's, and those
// its records list at the peaks (a trace cut short may list one whose site it never wrote).
std::vector<uint32_t> aggregate_stacks_named(const FirstPass& pass, const StacksAtPeaks& at_peaks) {
  std::vector<uint32_t> named = pass.site_stacks();
  const auto sites_end = static_cast<ptrdiff_t>(named.size());
  const auto add = [&](uint32_t stack) {
    if (!std::binary_search(named.begin(), named.begin() + sites_end, stack)) named.push_back(stack);
  };
  for (const auto& [key, p] : pass.agg_run_peak) add(stack_of_key(key));  // at_peaks.run_peak's, each
  for (const auto& [stage, top] : at_peaks.stage_peaks) {
    for (const StackBytes& s : top) add(s.stack);
  }
  if (static_cast<ptrdiff_t>(named.size()) > sites_end) {
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
  }
  return named;
}

// Each of `ascending` resolved in turn: each is then the next report stack (the order that
// numbers the stacks), where named first by the steps after, most went into a table by stack.
void resolve_in_order(StackResolver& stacks, const std::vector<uint32_t>& ascending) {
  stacks.reserve(ascending.size());
  for (const uint32_t stack : ascending) stacks.index_of(stack);
}

// Step "pass two": the stacks at the peaks. It replays the events (pass one's log of them,
// else the trace read again) on a thread of its own while this one resolves the stacks of
// every site, all the report will name (leaks and stacks at the peaks are sites too).
StacksAtPeaks pass_two(TraceFile& main, const JobPlan& job, const StageRows& stage_rows, StackResolver& stacks,
                       size_t top_stacks, ReadProgress& progress) {
  const FirstPass& pass = main.pass;
  if (pass.aggregate_mode()) {
    StacksAtPeaks at_peaks = stacks_at_peaks_of_aggregate(pass, top_stacks);
    resolve_in_order(stacks, aggregate_stacks_named(pass, at_peaks));
    return at_peaks;
  }
  if (pass.info.mode != trace::Mode::kFull && !pass.sample_mode()) return {};
  // Destroyed on return: what it holds (a count per info, and the infos themselves where it
  // read the trace again) is not held through the rest.
  PeakSnapshots snapshots(peak_targets(pass, job, stage_rows), pass.heap.infos().size(), pass.events);
  snapshots.top_stacks = top_stacks;
  std::exception_ptr pass_two_failed;
  {
    std::jthread replay([&] {
      try {
        replay_events(main, snapshots, progress.of_file());
      } catch (...) {
        pass_two_failed = std::current_exception();
      }
    });
    // Beside the replay, which reads pass one's infos as this does (lent, not moved).
    resolve_in_order(stacks, pass.site_stacks());
  }
  if (pass_two_failed) std::rethrow_exception(pass_two_failed);
  return std::move(static_cast<StacksAtPeaks&>(snapshots));
}

// Whether every stack the steps after pass two name was resolved in pass two: in full and
// sample modes the leaks, the peaks' stacks and the growing stacks are those of
// allocations, each counted in its site; in aggregate mode, sites' and those its records
// list at the peaks (aggregate_stacks_named). Not device memory's stacks, nor in stats
// mode (no sites).
bool names_only_sites_after_pass_two(const FirstPass& pass) {
  return (pass.info.mode == trace::Mode::kFull || pass.sample_mode() || pass.aggregate_mode()) && !pass.device.used();
}

// The allocator is asked at each new heap high, at stage edges, start and exit: the run's
// breakdown is the sample taken at the highest heap (the nearest to the peak in time among
// equals). One far below the peak (a program whose heap never grew enough to be sampled)
// would describe another moment, its start or exit: the breakdown is then estimated at the
// peak instead.
RssBreakdown run_breakdown(const FirstPass& pass, double peak_heap_time_s) {
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
    return FirstPass::breakdown_from(*at_peak, at_peak->live_bytes);
  }
  return estimated_breakdown(pass.peaks.heap_bytes, pass.peaks.rss_bytes, pass.last_tracer_bytes, peak_heap_time_s);
}

// Step "totals": the run's figures.
void fill_totals(const FirstPass& pass, MemoryFigures& t) {
  pass.peaks.fill(t, kNsPerS);
  t.allocations = pass.allocations;
  t.frees = pass.frees;
  t.bytes_allocated = pass.bytes_allocated;
  t.temporary_allocations = pass.sites.temporary_allocations();
  t.rss_breakdown = run_breakdown(pass, t.peak_heap_time_s);
  t.rss_breakdown.shares = resident_shares_at(pass.shares, t.rss_breakdown.t_s);
  t.fragmentation = fragmentation_of(t.rss_breakdown);
}

// Step "leaks": what the runtime holds for the process's life counted apart.
void add_leaks(FirstPass& pass, StackResolver& stacks, const StageRows& stage_rows, const AnalysisOptions& options,
               Report& report) {
  RuntimeLeaks runtime_leaks(report, report.python.has_value() && !pass.python_codes.empty(), options.leak_suppressions);
  report.leak_suppressions = options.leak_suppressions.size();
  list_leaks(count_leaks(pass, stacks, stage_rows, runtime_leaks, report), report);
}

// One stage instance's row figures, stacks aside. Stats and sample modes' counters are
// process-wide: `own_counters` holds each stage's own share (stages.own_counters()).
StageReport stage_report(const FirstPass& pass, size_t i, const std::string& path,
                         const std::vector<trace::CountersRecord>& own_counters) {
  const StageInstance& s = pass.stages.instances[i];
  StageReport r;
  r.name = pass.stages.names[s.name_id];
  r.path = path;
  r.parent = s.parent;
  r.depth = s.depth;
  r.start_s = s.start_ns / kNsPerS;
  r.end_s = s.end_ns / kNsPerS;
  r.closed = s.closed;
  MemoryFigures& f = r.figures;
  s.peaks.fill(f, kNsPerS);
  r.peak_heap_increase_bytes = s.peaks.heap_bytes - std::min(s.peaks.heap_bytes, s.at_start.heap_bytes);
  r.peak_rss_increase_bytes = s.peaks.rss_bytes - std::min(s.peaks.rss_bytes, s.at_start.rss_bytes);
  if (pass.counts_from_counters()) {
    f.allocations = own_counters[i].allocations;
    f.frees = own_counters[i].frees;
    f.bytes_allocated = own_counters[i].bytes_allocated;
  } else {
    f.allocations = s.allocations;
    f.frees = s.frees;
    f.bytes_allocated = s.bytes_allocated;
    f.temporary_allocations = s.temporary_allocations;
  }
  if (!pass.stats_mode()) {  // blocks are followed (sample mode: estimated from the samples)
    f.leaked_bytes = s.leaked_bytes;
    f.leaked_blocks = s.leaked_blocks;
    r.retained_bytes = s.retained_bytes;
  }
  f.rss_breakdown = s.has_breakdown ? s.breakdown
                                    : estimated_breakdown(s.peaks.heap_bytes, s.peaks.rss_bytes, pass.last_tracer_bytes,
                                                          s.peaks.heap_ns / kNsPerS);
  f.rss_breakdown.shares = resident_shares_at(pass.shares, f.rss_breakdown.t_s);
  f.fragmentation = fragmentation_of(f.rss_breakdown);
  return r;
}

// Step "stages": a row per stage path's instances (stage_rows.h), with the stacks held at
// the peak each row reports, host and device.
void add_stages(const FirstPass& pass, const StagePaths& stage_paths, StageRows& stage_rows,
                const StacksAtPeaks& at_peaks, StackResolver& stacks, const AnalysisOptions& options, Report& report) {
  const std::vector<trace::CountersRecord> own_counters =
      pass.counts_from_counters() ? pass.stages.own_counters() : std::vector<trace::CountersRecord>();
  std::unordered_map<size_t, std::vector<StackBytes>> device_stage_stacks;
  if (pass.device.used()) {
    device_stage_stacks = device_stacks_at_stage_peaks(pass.device, stacks, stage_rows, options.top_stacks);
  }
  for (size_t i = 0; i < pass.stages.instances.size(); ++i) {
    StageReport r = stage_report(pass, i, stage_paths.of(i), own_counters);
    // Only the instance whose peak its row reports needs its stacks.
    const auto it = at_peaks.stage_peaks.find(static_cast<int>(i));
    if (it != at_peaks.stage_peaks.end() && stage_rows.holds_row_peak(i)) {
      for (const StackBytes& sb : it->second) {
        r.top_stacks_at_peak.push_back(StackBytes{stacks.index_of(sb.stack), sb.bytes, sb.blocks});
      }
    }
    if (pass.device.used()) {
      r.device = device_stage_figures(pass.device.stages()[i]);
      if (auto held = device_stage_stacks.find(i); held != device_stage_stacks.end()) {
        r.device->top_stacks_at_peak = std::move(held->second);
      }
    }
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
}

// Step "stack figures": per stack and stage row, with the bytes live at the run's peak, and
// the stacks holding the most then.
void add_stack_figures(FirstPass& pass, const StacksAtPeaks& at_peaks, const StageRows& stage_rows,
                       StackResolver& stacks, size_t top_stacks, Report& report) {
  {
    std::vector<std::pair<uint64_t, uint64_t>> live_by_key;  // run_peak's order, by key
    live_by_key.reserve(at_peaks.run_peak.size());
    for (const auto& live : at_peaks.run_peak) live_by_key.emplace_back(live.key, live.bytes);
    pass.sites.live_at_peak(live_by_key);
  }
  report.stack_figures = pass.sites.take_by_row([&](int stage) { return stage_rows.row_of(stage); });
  report.stacks.reserve(report.stacks.size() + report.stack_figures.size());
  for (StackStageFigures& f : report.stack_figures) f.stack = stacks.index_of(f.stack);
  std::vector<StackBytes> run_top = at_peaks.run_peak_top(top_stacks);
  for (StackBytes& sb : run_top) sb.stack = stacks.index_of(sb.stack);
  report.top_stacks_at_peak = std::move(run_top);
}

// Step "growth": stacks whose live bytes grow steadily.
void add_growth(const FirstPass& pass, StackResolver& stacks, Report& report) {
  if (!pass.replays_growth() && !pass.aggregate_mode()) return;
  report.growth = pass.growth.report([&](uint32_t stack) { return stacks.index_of(stack); });
  if (pass.sample_mode()) mark_growth_estimated(*report.growth, pass.sample_rate_bytes);
}

// Step "RAM limit": when RSS passed --ram-limit, in which stage, and the stacks then.
void add_ram_limit(const FirstPass& pass, const StageRows& stage_rows, const StacksAtPeaks& at_peaks,
                   StackResolver& stacks, Report& report) {
  if (!pass.ram_limit) return;
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

// Step "timeline": the main process's heap and RSS over time, each point in its stage row.
void add_timeline(const FirstPass& pass, const StageRows& stage_rows, size_t max_points, Report& report) {
  const MemoryFigures& t = report.totals;
  report.timeline = pass.timeline.report(max_points, t.peak_heap_time_s, t.peak_heap_bytes);
  for (TimelinePoint& p : report.timeline) p.stage = stage_rows.row_of(p.stage);
}

ProcessReport process_report(const FirstPass& p) {
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
}

// Step "processes": every process of the job, in the job's order (the one memstage started
// first), and what is wrong with their traces.
void add_processes(const Traces& traces, const JobPlan& job, Report& report) {
  for (size_t n = 0; n < job.order.size(); ++n) {
    const FirstPass& p = traces.files[job.order[n]]->pass;
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
  warn_of_untraced_execs(report);
  for (const auto& f : traces.files) {
    const uint64_t inherited = inherited_heap_bytes(traces.files, *f);
    warn_if_outside_malloc(*f, inherited, report.warnings);
    note_inherited_frees(*f, inherited, report);
  }
}

// Each other process's replay to the job's peak, apart and at once; none for a process
// that held nothing then.
std::vector<std::optional<PeakSnapshots>> replay_to_job_peak(Traces& traces, const JobPlan& job, size_t top_stacks) {
  std::vector<std::optional<PeakSnapshots>> held(job.order.size());
  std::vector<std::exception_ptr> replay_failed(job.order.size());
  run_at_once(job.order.size() - 1, [&](size_t i) {
    const size_t n = i + 1;
    if (!job.event_at_peak[n]) return;
    TraceFile& file = *traces.files[job.order[n]];
    try {
      held[n].emplace(std::vector<PeakSnapshots::Target>{{job.event_at_peak[n], PeakSnapshots::kJobPeak}},
                      file.pass.heap.infos().size(), file.pass.events);
      held[n]->top_stacks = top_stacks;
      replay_events(file, *held[n], {});
    } catch (...) {
      replay_failed[n] = std::current_exception();
    }
  });
  for (const std::exception_ptr& failed : replay_failed) {
    if (failed) std::rethrow_exception(failed);
  }
  return held;
}

// Step "stacks final" (AnalysisOptions::once_stacks_final): the report's frames and nodes,
// which nothing adds to any more, and a copy of its stacks (taken here: the list may still
// grow), to the caller's work on a thread of its own.
std::future<void> hand_stacks_beside(const AnalysisOptions& options, const Report& report) {
  return std::async(std::launch::async, [work = options.once_stacks_final, frames = std::span(report.frames),
                                         nodes = std::span(report.stack_nodes), stacks = report.stacks] {
    work(StackLists{frames, nodes, stacks});
  });
}

// Step "job stacks": the stacks held at the job's peak, in every process that held heap then.
void add_job_stacks(Traces& traces, JobPlan& job, const StacksAtPeaks& at_peaks, StackResolver& stacks,
                    const AnalysisOptions& options, Report& report) {
  report.job = std::move(job.job);
  std::vector<JobStack>& job_stacks = report.job.top_stacks_at_peak;
  if (auto it = at_peaks.stage_peaks.find(StacksAtPeaks::kJobPeak); it != at_peaks.stage_peaks.end()) {
    for (const StackBytes& sb : it->second) {
      job_stacks.push_back(JobStack{0, StackBytes{stacks.index_of(sb.stack), sb.bytes, sb.blocks}});
    }
  }
  std::vector<std::optional<PeakSnapshots>> held = replay_to_job_peak(traces, job, options.top_stacks);
  // Their stacks named in the job's order.
  for (size_t n = 1; n < job.order.size(); ++n) {
    if (!held[n]) continue;
    const TraceFile& file = *traces.files[job.order[n]];
    StackResolver resolver(file.pass.stacks, file.pass.module_snapshots, file.pass.python_codes, report,
                           options.symbolize);
    for (const StackBytes& sb : held[n]->stage_peaks[PeakSnapshots::kJobPeak]) {
      job_stacks.push_back(JobStack{n, StackBytes{resolver.index_of(sb.stack), sb.bytes, sb.blocks}});
    }
    held[n].reset();
  }
  std::stable_sort(job_stacks.begin(), job_stacks.end(),
                   [](const JobStack& a, const JobStack& b) { return a.held.bytes > b.held.bytes; });
  if (job_stacks.size() > options.top_stacks) job_stacks.resize(options.top_stacks);
}

}  // namespace

void note_ram_limit(Report& report, uint64_t limit_bytes) {
  report.ram_limit_bytes = limit_bytes;
  // The program's RSS, the tracer's own left out, as the limit's passing is measured.
  const uint64_t peak = report.totals.peak_program_rss_bytes;
  if (report.ram_limit || limit_bytes == 0 || peak * 10 < limit_bytes * 9) return;  // passed: said apart
  report.warnings.push_back(fmt::format("the program's peak RSS, {:.1f} MiB, came to {:.0f}% of the RAM limit of {:.1f} MiB",
                                        peak / kBytesPerMiB, 100.0 * static_cast<double>(peak) / static_cast<double>(limit_bytes),
                                        limit_bytes / kBytesPerMiB));
}

Report analyze(const std::vector<std::string>& trace_paths, const std::optional<RunInfo>& run,
               const AnalysisOptions& options, TraceBeingWritten* read_ahead) {
  if (trace_paths.empty()) throw std::runtime_error("no trace files to analyse");
  uint64_t total_bytes = 0;
  for (const auto& p : trace_paths) total_bytes += std::filesystem::file_size(p);
  // Each trace is read twice at most: progress counts both reads of the main one.
  ReadProgress read_progress(options.progress, total_bytes + total_bytes);
  KeptTextBudget own_budget(options.max_kept_text_bytes);
  KeptTextBudget& kept_text = read_ahead ? read_ahead->budget() : own_budget;
  std::function<std::unique_ptr<TraceFile>(const std::string&)> take_read_ahead;
  if (read_ahead) take_read_ahead = [&](const std::string& path) { return read_ahead->take(path); };

  Traces traces = read_traces(trace_paths, run, kept_text, options.max_event_log_bytes, read_progress, take_read_ahead,
                              options.return_freed_pages);
  find_main_trace(traces);
  // Pass one's reading (chunks, growth tables) is freed; pass two's lists are larger.
  if (options.return_freed_pages) options.return_freed_pages();
  TraceFile& main = traces.main();
  FirstPass& pass = main.pass;
  Report report = describe_run(pass, run);
  add_read_warnings(traces, run, report);
  JobPlan job = plan_job(traces.files, traces.main_index, options.max_timeline_points);
  StagePaths stage_paths;
  StageRows stage_rows(stage_keys(pass, kept_text, stage_paths));
  std::unique_ptr<StackResolver> resolver =
      read_ahead ? read_ahead->take_stacks(main, report, options.symbolize) : nullptr;
  if (!resolver) {
    resolver = std::make_unique<StackResolver>(pass.stacks, pass.module_snapshots, pass.python_codes, report,
                                               options.symbolize,
                                               read_ahead ? read_ahead->take_symbolizer() : Symbolizer());
  }
  StackResolver& stacks = *resolver;
  stacks.place_tree();  // every site's stack is named, in every mode: most of the tree
  StacksAtPeaks at_peaks = pass_two(main, job, stage_rows, stacks, options.top_stacks, read_progress);
  std::future<void> beside;  // once_stacks_final's, joined (on a throw too) before the report goes
  // Every site's stack is resolved: the sites' list is made in the room the resolution's
  // walk state leaves (the same memory, not more).
  if (names_only_sites_after_pass_two(pass)) {
    stacks.forget_tree();
    pass.stacks = StackTree();
    if (options.once_stacks_final && job.order.size() == 1) beside = hand_stacks_beside(options, report);
  } else {
    stacks.forget_walks();
  }
  // The run peak's list after the freed pages go back: made in fresh pages, not on top of
  // the resolution's pages jemalloc still holds (pass two's high).
  if (options.return_freed_pages) options.return_freed_pages();
  at_peaks.count_run_peak(pass.heap.infos());
  pass.hand_over_agg_counts();
  pass.sites.finish(pass.heap.infos());
  fill_totals(pass, report.totals);
  add_leaks(pass, stacks, stage_rows, options, report);
  add_stages(pass, stage_paths, stage_rows, at_peaks, stacks, options, report);
  add_stack_figures(pass, at_peaks, stage_rows, stacks, options.top_stacks, report);
  add_growth(pass, stacks, report);
  add_ram_limit(pass, stage_rows, at_peaks, stacks, report);
  add_timeline(pass, stage_rows, options.max_timeline_points, report);
  add_processes(traces, job, report);
  add_job_stacks(traces, job, at_peaks, stacks, options, report);
  if (options.symbolize) warn_of_modules_changed_since(traces.files, report);
  if (run && run->ram_limit_bytes) note_ram_limit(report, *run->ram_limit_bytes);
  if (beside.valid()) beside.get();
  return report;
}

namespace {

// Step "held now" (the run so far): the stacks holding most now, by stack alone, in `leaks`
// (the runtime's marked, as at the end), from the live blocks or aggregate mode's sites.
void add_held_now(const FirstPass& pass, StackResolver& stacks, const AnalysisOptions& options, Report& report) {
  absl::flat_hash_map<uint32_t, StackBytes> by_stack;
  pass.for_each_held([&](uint32_t stack, int, uint64_t bytes, uint64_t blocks) {
    StackBytes& s = by_stack[stack];
    s.stack = stack;
    s.bytes += bytes;
    s.blocks += blocks;
  });
  std::vector<StackBytes> largest;
  largest.reserve(by_stack.size());
  for (const auto& [stack, s] : by_stack) largest.push_back(s);
  // The largest until top_stacks of the program's are named: the runtime's own (an
  // interpreter's imports) are often most of the largest. Bounded: each named costs its frames.
  const size_t candidates = std::min(largest.size(), options.top_stacks * 16);
  std::partial_sort(largest.begin(), largest.begin() + static_cast<ptrdiff_t>(candidates), largest.end(),
                    [](const StackBytes& a, const StackBytes& b) { return a.bytes > b.bytes; });
  RuntimeLeaks runtime(report, report.python.has_value() && !pass.python_codes.empty(), options.leak_suppressions);
  size_t program_stacks = 0;
  for (size_t i = 0; i < candidates && program_stacks < options.top_stacks; ++i) {
    const StackIndex stack = stacks.index_of(largest[i].stack);
    const bool runtime_held = runtime.is_runtime(stack);
    program_stacks += !runtime_held;
    report.leaks.push_back(Leak{largest[i].bytes, largest[i].blocks, -1, stack, runtime_held});
  }
}

}  // namespace

Report report_so_far(std::vector<const TraceFile*> files, const AnalysisOptions& options, Symbolizer& symbolizer,
                     SoFarStacks which) {
  const size_t main = order_and_find_main(files);
  const FirstPass& pass = files[main]->pass;
  Report report = describe_run(pass, std::nullopt);
  KeptTextBudget kept_text(options.max_kept_text_bytes);  // its own: each call charges its paths anew
  StagePaths stage_paths;
  StageRows stage_rows(stage_keys(pass, kept_text, stage_paths));
  StackResolver stacks(pass.stacks, pass.module_snapshots, pass.python_codes, report, options.symbolize,
                       std::move(symbolizer));
  fill_totals(pass, report.totals);
  if (which == SoFarStacks::kEvery) {
    add_every_stack_so_far(pass, stage_rows, stacks, options, report);
  } else {
    add_held_now(pass, stacks, options, report);
  }
  add_stages(pass, stage_paths, stage_rows, StacksAtPeaks{}, stacks, options, report);
  add_growth(pass, stacks, report);
  add_timeline(pass, stage_rows, options.max_timeline_points, report);
  // The timeline ends now, whatever the thinning kept: its last point is the view's "now".
  if (!pass.timeline.points().empty() &&
      (report.timeline.empty() || report.timeline.back().t_s < pass.timeline.points().back().t_s)) {
    report.timeline.push_back(pass.timeline.points().back());
    report.timeline.back().stage = stage_rows.row_of(report.timeline.back().stage);
  }
  report.processes.push_back(process_report(pass));
  for (size_t i = 0; i < files.size(); ++i) {
    if (i != main) report.processes.push_back(process_report(files[i]->pass));
  }
  symbolizer = stacks.take_symbolizer();
  return report;
}

}  // namespace memstage::reports
