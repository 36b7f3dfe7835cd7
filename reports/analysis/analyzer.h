// Turns the trace files of one run into the analysis model (reports/model).
// Goes over each trace's events twice: the first pass (first_pass.h) reads the trace and
// finds totals, stages and the moments of the peaks; the second replays the events up to
// those moments to see which stacks held the memory (from the first pass's log of them,
// event_log.h, or for a trace past its bound, the trace read again). Memory grows with the
// live blocks and distinct stacks, and up to that bound with the events.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "reports/model/report_model.h"
#include "reports/model/stack_lists.h"

namespace memstage::reports {

class KeptTextBudget;  // first_pass.h
struct TraceFile;
class Symbolizer;     // reports/symbolize/symbolizer.h
class StackResolver;  // reports/analysis/stack_resolver.h

// What `memstage run` knows about the run that the traces can't say.
struct RunInfo {
  std::vector<std::string> command;
  std::optional<uint64_t> pid;  // the process memstage started (absent in older run.json)
  int exit_code = 0;
  std::optional<int> signal;
  double duration_s = 0;
  std::optional<OomKill> oom_kill;  // the OOM killer ended processes of the run
  // After a SIGKILL: wait4's ru_maxrss of the process memstage started, the kernel's
  // high-water mark of its RSS, which the dead tracer never wrote (apply_rss_at_death).
  std::optional<uint64_t> max_rss_bytes;
  // --ram-limit's bytes (or auto's: the cgroup's limit), whether RSS passed them or not.
  std::optional<uint64_t> ram_limit_bytes;
};

struct AnalysisOptions {
  size_t top_stacks = 20;     // stacks kept per stage at its peak
  size_t max_timeline_points = 2000;
  bool symbolize = true;
  // What the analysis keeps as text and lists from a trace: module lists, stage paths,
  // names. A few compressed bytes can describe a lot (a module list repeated a million
  // times, stages 256 deep with 4 KiB names): past this the analysis stops with
  // AnalysisLimitError rather than exhaust memory. A real run needs a few MB (Python
  // importing torch: ~10 MB of module lists).
  uint64_t max_kept_text_bytes = 1ull << 30;
  // Pass one keeps the alloc and free events in memory for pass two to replay, up to this
  // many bytes (1-5 an event); past it, pass two reads the trace again
  // (reports/analysis/event_log.h).
  size_t max_event_log_bytes = size_t{64} << 20;
  // The user's leak suppressions (LSan's `leak:PATTERN`, docs/architecture.md): a leaked
  // stack with a frame they match is held apart with the runtime's, not in `leaked`.
  std::vector<std::string> leak_suppressions;
  // Called with (bytes done, bytes in all) as the traces are read.
  std::function<void(uint64_t, uint64_t)> progress;
  // Called where the analysis has let go of much and is about to make its next large lists:
  // gives the freed pages back to the kernel (harness/cli/analysis_allocator.h).
  std::function<void()> return_freed_pages;
  // Run on a thread of its own beside the analysis's last steps, once nothing more will be
  // added to the report's frames and stack nodes, with those and a copy of the stacks named
  // so far (a stack named after has no frames); joined before analyze() returns. Work made
  // of the stacks alone (`memstage run`'s page call tree: the second core idles then). Not
  // called where later steps still name stacks of their own frames: several processes,
  // device memory, stats mode.
  std::function<void(const StackLists&)> once_stacks_final;
};

// A trace describes more than the analysis will keep (AnalysisOptions::max_kept_text_bytes).
class AnalysisLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Finds the trace files (trace.*.mst) in a run's output folder, in name order (analyze
// orders the processes by their start).
std::vector<std::string> find_traces(const std::string& dir);

// The traces of a run whose processes are still running, each read by a thread of its own
// as the tracer writes it: `memstage run` has the first pass of its program, and of every
// process the program starts, done by the time the program ends, on cores the program
// leaves idle, instead of reading them all afterwards. The analysis it is handed to takes
// those passes as its own (the report is the same).
// Which stacks the run so far names (TraceBeingWritten::so_far): the few held most now
// (`top_stacks`, a view), or every stack held now and every site's allocation figures (the
// endpoint's heap and allocs profiles: reports/analysis/stacks_so_far.h).
enum class SoFarStacks { kTopHeld, kEvery };

class TraceBeingWritten {
 public:
  // Watches `dir`, the run's folder, and follows each trace (trace.*.mst) that appears in
  // it from then on, up to 16 at once (one whose process ended makes room for the next);
  // `options` must be those of the analysis it is handed to. With `with_stacks` (the run
  // records stacks), the reader of the main process's trace resolves its stacks as it reads
  // them (StackResolver::resolve_while_read), and, symbolized, a thread at the lowest
  // priority opens the C library's modules and each module the traces list meanwhile
  // (Symbolizer::warm: a symbol cache's file, or the symbols and debug information) until
  // that reader begins.
  TraceBeingWritten(std::string dir, const AnalysisOptions& options, bool with_stacks = false);
  ~TraceBeingWritten();  // stops reading and waits for the threads
  TraceBeingWritten(const TraceBeingWritten&) = delete;
  TraceBeingWritten& operator=(const TraceBeingWritten&) = delete;

  // The processes that write the traces have ended: read what is left of them, then stop.
  void writer_ended();
  // How many traces were followed (for tests): ends the watching, as writer_ended does.
  size_t traces_followed();
  // How many of the main process's stacks the analysis it was handed to found resolved
  // while the trace was read (for tests).
  size_t stacks_resolved_early() const;

  // The run so far, as the followed traces stand at their latest chunk, for a view drawn
  // again every second (memstage live, run --live): pass one's figures (peaks, stages,
  // timeline, processes) with the stacks holding most now as `leaks` and those growing
  // fastest as `growth`, not the stacks at the peaks (no pass two); with SoFarStacks::kEvery
  // every stack held now and every site's allocation figures (the endpoint's). Its cost is
  // the live blocks, the sites and the stacks it names, not the events. None while no trace
  // has begun.
  // Not after the analysis took the traces (analyze with this as `read_ahead`).
  std::optional<Report> so_far(const AnalysisOptions& options, SoFarStacks which = SoFarStacks::kTopHeld);

  struct State;  // trace_being_written.cpp

 private:
  // For the analysis it is handed to (analyze): the budget its passes charged, the pass over
  // `trace_path` if it was followed to the file's end (null otherwise; what its reading
  // threw, this throws), the symbolizer warmed meanwhile.
  KeptTextBudget& budget();
  std::unique_ptr<TraceFile> take(const std::string& trace_path);
  Symbolizer take_symbolizer();
  // The stacks of `file` (taken) resolved while it was read, now resolving into `report`;
  // null where they were not.
  std::unique_ptr<StackResolver> take_stacks(const TraceFile& file, Report& report, bool analysis_symbolizes);

  std::unique_ptr<State> state_;
  friend Report analyze(const std::vector<std::string>&, const std::optional<RunInfo>&, const AnalysisOptions&,
                        TraceBeingWritten*);
};

// The RAM limit the run was given, in the report: `report.ram_limit_bytes`, and a warning
// once the program's peak RSS came within 10 % of it (at 90 % a service is one spike from
// its end).
void note_ram_limit(Report& report, uint64_t limit_bytes);

// Analyses the traces of one run; the first process started is the one reported, the
// others appear under `processes`. Throws trace::NotATraceError for a non-trace file.
// `read_ahead`, when given, followed some of `trace_paths` while they were written; it is
// told the writers ended, and its passes are taken instead of reading those files again.
Report analyze(const std::vector<std::string>& trace_paths, const std::optional<RunInfo>& run,
               const AnalysisOptions& options, TraceBeingWritten* read_ahead = nullptr);

}  // namespace memstage::reports
