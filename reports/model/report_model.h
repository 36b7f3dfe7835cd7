// The analysis model: what a trace says about a run, independent of how it was captured
// and of how it is shown. The analyzer (reports/analysis) fills it; renderers
// (reports/render: JSON, text, HTML, exports) only read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace memstage::reports {

struct Frame {
  std::string function;      // demangled; empty when the module has no symbol for it
  std::string file;          // source file; empty without line information
  int line = 0;              // 0 when unknown
  std::string module;        // path of the executable or shared object
  uint64_t address = 0;      // address in the traced process (0 for Python frames)
  uint64_t module_offset = 0;  // address - load bias, for "module+0x1234" display
  bool inlined = false;      // inlined into the frame that follows it
  // Allocation plumbing, not where the program asked for memory: the allocator, operator
  // new, the C++ standard library's templates, the C runtime (strdup, fopen). Set by the
  // analysis (reports/analysis/allocator_frames.h); renderers read it, never guess.
  bool allocator = false;
  std::string kind = "native";  // "native" or "python"

  bool operator==(const Frame&) const = default;
};
using FrameIndex = uint32_t;  // index into Report::frames

// Stacks as a tree, as the trace keeps them (reports/analysis/stack_tree.h): a node is a
// frame and the node of its caller, so the outer frames that thousands of stacks share are
// stored once: a Python program importing torch names 7e5 stacks of ~66 frames, 4.6e7
// frames in all (177 MiB as a list per stack), in 2.4e6 nodes (19 MB). Node 0 is the empty
// stack, the root every walk ends at.
using StackNodeIndex = uint32_t;  // index into Report::stack_nodes
struct StackNode {
  FrameIndex frame = 0;
  StackNodeIndex caller = 0;  // 0: this frame is the stack's outermost

  bool operator==(const StackNode&) const = default;
};

// A stack is its innermost frame's node. Its frames, innermost first, the tracer's own frames
// removed, are the walk from there to the root (Report::frames_of).
struct Stack {
  StackNodeIndex innermost = 0;  // 0: no frames
};

// The frames of a stack, or of the part of it from some node on, innermost first: a forward
// range of FrameIndex that walks callers. Renderers go over stacks this way only.
class StackFrames {
 public:
  class iterator {
   public:
    using value_type = FrameIndex;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const StackNode* nodes, StackNodeIndex node) : nodes_(nodes), node_(node) {}
    FrameIndex operator*() const { return nodes_[node_].frame; }
    iterator& operator++() {
      node_ = nodes_[node_].caller;
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& other) const { return node_ == other.node_; }
    bool operator==(std::default_sentinel_t) const { return node_ == 0; }
    // The node of the frame this points at: the stack from here on.
    StackNodeIndex node() const { return node_; }

   private:
    const StackNode* nodes_ = nullptr;
    StackNodeIndex node_ = 0;
  };

  StackFrames(const std::vector<StackNode>& nodes, StackNodeIndex innermost)
      : nodes_(nodes.data()), innermost_(innermost) {}
  iterator begin() const { return {nodes_, innermost_}; }
  std::default_sentinel_t end() const { return {}; }
  bool empty() const { return innermost_ == 0; }
  FrameIndex front() const { return nodes_[innermost_].frame; }  // the innermost (not empty)
  size_t size() const {  // walks the stack
    size_t n = 0;
    for (StackNodeIndex node = innermost_; node != 0; node = nodes_[node].caller) ++n;
    return n;
  }
  // The same walk from the frame `it` points at (an iterator of this range).
  StackFrames from(iterator it) const { return StackFrames(nodes_, it.node()); }

 private:
  StackFrames(const StackNode* nodes, StackNodeIndex innermost) : nodes_(nodes), innermost_(innermost) {}
  const StackNode* nodes_;
  StackNodeIndex innermost_;
};
using StackIndex = uint32_t;  // index into Report::stacks

struct StackBytes {
  StackIndex stack = 0;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

// docs/architecture.md "where RSS goes": live -> allocator in use -> allocator resident -> RSS.
// How the resident pages stood against other processes' (/proc/self/smaps_rollup): pages
// also mapped by another process (copy-on-write pages a fork left shared, shared
// libraries, shared memory) and pages of this process alone; PSS counts a page shared by n
// processes 1/n. Sampled less often than RSS: `t_s` is the sample's own moment.
struct ResidentShares {
  uint64_t shared_bytes = 0;
  uint64_t private_bytes = 0;
  uint64_t pss_bytes = 0;
  double t_s = 0;
};

struct RssBreakdown {
  uint64_t live_bytes = 0;
  uint64_t allocator_in_use_bytes = 0;
  uint64_t allocator_resident_bytes = 0;
  uint64_t rss_bytes = 0;
  uint64_t tracer_bytes = 0;
  bool estimated = true;  // the allocator gave no figures; derived from RSS instead
  // The moment the figures describe: the allocator sample they come from (the run's: the
  // sample at the highest heap; a stage's: its end), or the peak when estimated.
  double t_s = 0;
  // The shares sample nearest t_s; absent without samples.
  std::optional<ResidentShares> shares;
};

struct Fragmentation {
  double ratio = 0;  // 1 - live / allocator_resident
  bool estimated = true;
};

// Fragmentation is headlined (the text summary, the page's figure) only where the allocator
// holds enough free memory to matter: 97 % of a 132 KiB arena is nothing to act on.
inline constexpr uint64_t kFragmentationHeadlineFreeBytes = uint64_t{1} << 20;
inline uint64_t allocator_free_bytes(const RssBreakdown& b) {
  return b.allocator_resident_bytes > b.live_bytes ? b.allocator_resident_bytes - b.live_bytes : 0;
}

// Figures shared by the whole run and by each stage.
struct MemoryFigures {
  uint64_t peak_heap_bytes = 0;
  double peak_heap_time_s = 0;
  uint64_t peak_rss_bytes = 0;  // RSS as measured, the tracer's own memory included
  // The program's own: RSS less the tracer's resident memory, at its highest. What
  // `--ram-limit` compares with the limit.
  uint64_t peak_program_rss_bytes = 0;
  uint64_t tracer_peak_bytes = 0;  // the tracer's own resident memory at its highest
  uint64_t allocations = 0;   // allocation events (malloc, calloc, realloc, new, ...)
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
  uint64_t temporary_allocations = 0;
  uint64_t leaked_bytes = 0;
  uint64_t leaked_blocks = 0;
  // Accessible anonymous mmap'd bytes outside malloc, at their peak; PROT_NONE and
  // MAP_NORESERVE reservations count only where mprotect made them accessible.
  uint64_t mmap_peak_bytes = 0;
  Fragmentation fragmentation;
  RssBreakdown rss_breakdown;
};

// A caching allocator's own figures (PyTorch's torch.cuda.memory_stats, read by the
// Python stage markers): device memory it reserved from the driver, and the part tensors
// use; the difference is its cache. At the last sample (a stage's end) and their highs.
struct DeviceCache {
  uint64_t t_ns = 0;  // of the last sample
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t peak_reserved_bytes = 0;
  uint64_t peak_allocated_bytes = 0;
};

// Device memory (CUDA) as the driver and runtime handed it out, exact from every call the
// tracer saw. For a stage, as for the heap: allocations count what was allocated while it
// was the innermost stage, the peak is the process's while it was open.
struct DeviceFigures {
  uint64_t peak_bytes = 0;
  double peak_time_s = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
  uint64_t retained_bytes = 0;  // stages: allocated in it or its children, live at its end
  uint64_t leaked_bytes = 0;    // never freed
  uint64_t leaked_blocks = 0;
  std::optional<DeviceCache> cache;
  // Stages only: the device memory held at the stage's device peak, by stack, largest first
  // (the run's are DeviceReport::top_stacks_at_peak).
  std::vector<StackBytes> top_stacks_at_peak;
};

struct StageReport {
  std::string name;
  std::string path;   // names from the outermost stage, joined by '/'
  int parent = -1;    // index into Report::stages
  int depth = 0;
  double start_s = 0;
  double end_s = 0;   // the run's end when the stage was never closed
  bool closed = true;
  // Allocation figures count what was allocated while this stage was the innermost
  // open one; peaks are of the whole process while the stage was open.
  MemoryFigures figures;
  uint64_t retained_bytes = 0;  // allocated in this stage or its children, live at its end
  // How far the heap and the RSS rose above their level at the stage's start: the stage's
  // own demand, whatever earlier stages left live (a test's figure in the pytest plugin).
  uint64_t peak_heap_increase_bytes = 0;
  uint64_t peak_rss_increase_bytes = 0;
  std::vector<StackBytes> top_stacks_at_peak;
  std::optional<DeviceFigures> device;  // when the run used device memory
  // How many stage instances the row stands for: 1, or past StageGrouping's limit the
  // instances of its path grouped into one row (reports/analysis/stage_rows.h): from the
  // first's start to the last's end, the highest peak (with that instance's time,
  // breakdown and stacks), counts, retained and leaked bytes summed.
  uint64_t instances = 1;
  double open_s = 0;  // with instances > 1: the time its instances were open, summed
};

// The seconds a row's stage was open: its instances' summed, or its own span.
inline double stage_open_s(const StageReport& s) { return s.instances > 1 ? s.open_s : s.end_s - s.start_s; }

// A run with more stage instances than the limit (a loop that marks every batch) has them
// grouped by path in Report::stages (reports/analysis/stage_rows.h).
struct StageGrouping {
  uint64_t instances = 0;        // stage instances in the run
  uint64_t rows = 0;             // rows of Report::stages
  uint64_t ungrouped_limit = 0;  // up to this many instances, each is a row
  uint64_t first_kept = 0;       // the first this many instances are rows of their own
  std::string note;              // the same in words, for every renderer
};

struct Leak {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  int stage = -1;  // index into Report::stages, -1 outside any stage
  StackIndex stack = 0;
  // Held by the runtime for the process's life (reports/analysis/runtime_frames.h), not
  // the program's leak: counted in RuntimeHeld, not in the leaked figures.
  bool runtime = false;
};

// What the C/C++ runtime, the dynamic loader and the Python interpreter still held at exit
// for the process's life: kept apart from the program's leaks (and from `leaked` budgets).
struct RuntimeHeld {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

struct TimelinePoint {
  double t_s = 0;
  uint64_t heap_bytes = 0;
  uint64_t rss_bytes = 0;
  uint64_t tracer_bytes = 0;  // the tracer's own resident memory, part of rss_bytes
  int stage = -1;  // innermost open stage
};

struct DeviceTimelinePoint {
  double t_s = 0;
  uint64_t bytes = 0;
  int stage = -1;  // innermost open stage
};

struct DeviceReport {
  DeviceFigures totals;
  std::vector<StackBytes> top_stacks_at_peak;  // at the run's device peak
  std::vector<Leak> leaks;                     // device blocks never freed, largest first
  std::vector<DeviceTimelinePoint> timeline;   // every allocation and free (bucketed when many)
  uint64_t unknown_frees = 0;                  // frees of blocks the trace never saw allocated
};

struct ProcessReport {
  uint64_t pid = 0;
  uint64_t parent_pid = 0;
  std::vector<std::string> command;
  uint64_t peak_heap_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  bool complete = true;  // the trace ended cleanly
  // How the process ended, as far as its trace says: "exit" (exit or return from main),
  // "signal" (a fatal signal), "exec" (replaced by the program at exec_path, which has
  // its own trace), "unknown" (no record of it: killed by SIGKILL or the OOM killer, or
  // the trace was cut short).
  std::string ended = "exit";
  std::string exec_path;
  std::optional<int> exit_code;  // known for the process memstage started only
  std::optional<int> signal;
  // On the job's clock (JobReport): when its trace started and its last record.
  double start_s = 0;
  double end_s = 0;
  uint64_t heap_at_job_peak_bytes = 0;  // its share of JobReport::peak_heap_bytes
  // Sampled from /proc/self/smaps_rollup less often than RSS; absent without samples.
  std::optional<uint64_t> peak_pss_bytes;
  std::optional<uint64_t> peak_uss_bytes;  // resident pages private to it
  // Where it stood in a distributed job (its environment: RANK, LOCAL_RANK, ...).
  std::string host;
  std::optional<uint64_t> rank;
  std::optional<uint64_t> local_rank;
  std::optional<uint64_t> world_size;
};

// One process's stack among those holding memory at the job's peak.
struct JobStack {
  size_t process = 0;  // index into Report::processes
  StackBytes held;
};

// The job's clock at one instant: sums over the processes alive then.
struct JobTimelinePoint {
  double t_s = 0;
  uint64_t heap_bytes = 0;
  uint64_t rss_bytes = 0;
  std::optional<uint64_t> pss_bytes;  // with PSS samples
  std::vector<uint64_t> process_heap_bytes;  // per Report::processes entry
};

// Every traced process of a run (forked workers, exec'd programs, ranks) taken together,
// on one clock: t = 0 when the earliest process's trace started. Each peak is the highest
// sum over the processes alive at the same instant (docs/architecture.md, "the job").
// Heap figures are known to the tracer's sampling interval: within one interval each
// process counts at its highest (clock_resolution_s says how wide that is).
struct JobReport {
  uint64_t peak_heap_bytes = 0;
  double peak_heap_time_s = 0;
  uint64_t peak_rss_bytes = 0;
  double peak_rss_time_s = 0;
  // PSS counts a page shared by n processes 1/n in each, so shared copy-on-write pages
  // count once in the job; USS counts only each process's private pages. Absent when no
  // trace has PSS samples (the kernel has no smaps_rollup).
  std::optional<uint64_t> peak_pss_bytes;
  double peak_pss_time_s = 0;
  std::optional<uint64_t> peak_uss_bytes;
  // Summed RSS well over summed PSS: the processes share many pages, and a sum of RSS
  // (what per-process tools show) overstates the job (analyzer.cpp says how far is "well").
  bool rss_overstates = false;
  double clock_resolution_s = 0;
  std::vector<JobStack> top_stacks_at_peak;  // across processes, largest first
  std::vector<JobTimelinePoint> timeline;  // empty for one process (Report::timeline is its)
};

// Per stack and stage: the figures behind flame graphs and the top allocation sites.
struct StackStageFigures {
  StackIndex stack = 0;
  int stage = -1;
  uint64_t allocations = 0;
  uint64_t bytes_allocated = 0;
  uint64_t temporary_allocations = 0;
  uint64_t live_at_peak_bytes = 0;  // at the run's peak heap
  uint64_t leaked_bytes = 0;
};

// A stack whose live bytes grow steadily over the run (reports/analysis/growth.h says how
// steady growth is told from a constant buffer, a one-off burst or churn).
struct GrowthPoint {
  double t_s = 0;
  uint64_t live_bytes = 0;
};
struct GrowingStack {
  StackIndex stack = 0;
  double bytes_per_s = 0;   // least-squares slope of its live bytes since since_s
  uint64_t live_bytes = 0;  // at the last snapshot
  double since_s = 0;       // it has held memory without a break since this snapshot
  double r_squared = 0;     // of the linear fit since since_s
  std::vector<GrowthPoint> series;  // its live bytes at every snapshot held (the chart)
  // Sample mode: the series are weighted samples, so the rate is an estimate; this is its
  // expected relative error (one standard error of the bytes it grew by, from
  // SamplingReport's sqrt(rate / bytes)). Absent where the series are exact.
  std::optional<double> relative_standard_error;
};
struct GrowthReport {
  double interval_s = 0;  // between the snapshots held (it doubles as a long run goes on)
  uint64_t snapshots = 0;
  std::vector<GrowingStack> stacks;  // fastest first
  // Sample mode: that the rates are estimates and how good, in words, for every renderer;
  // empty where the series are exact.
  std::string estimate_note;
};

// `memstage run --ram-limit`: when RSS passed the RAM of the machine being played.
struct RamLimitReport {
  uint64_t limit_bytes = 0;
  uint64_t rss_bytes = 0;  // the sample that passed it
  double t_s = 0;
  int stage = -1;          // innermost open stage then
  std::vector<StackBytes> top_stacks;  // holding memory then (full mode)
};

// The traced program ran Python with Python frames recorded (memstage run's bootstrap).
struct PythonRun {
  std::string version;
  // "pymalloc": objects up to 512 bytes came from pymalloc's arenas, counted as anonymous
  // mmaps (mmap_peak_bytes), not in the heap figures; "malloc": PYTHONMALLOC=malloc, every
  // object is in the heap figures.
  std::string allocator;
};

// Sample mode (`memstage run --mode sample`): which figures are estimates, and how good.
// Allocations were sampled by bytes at `rate_bytes` (profiler/trace/sampling.h): stacks,
// leaks, sites, their bytes and blocks are unbiased estimates; the heap peaks, per stage
// and for the run, and the counts of allocations, frees and bytes allocated are exact;
// temporaries are not measured.
struct SamplingReport {
  uint64_t rate_bytes = 0;
  uint64_t samples = 0;  // allocations recorded with their stacks
  // What is estimated, what is exact and the expected error, in words, for every renderer.
  std::string note;
};

// The kernel's OOM killer ended processes of the run (memstage run reads the cgroup it and
// the program ran in: v2 memory.events, v1 memory.oom_control).
struct OomKill {
  std::string cgroup;                   // the cgroup whose limit was hit, as /proc/PID/cgroup names it
  int cgroup_version = 2;               // 1 or 2
  std::optional<uint64_t> limit_bytes;  // its memory.max / memory.limit_in_bytes; none when unlimited
  uint64_t processes_killed = 0;        // OOM kills counted in the cgroup during the run
};

struct Report {
  std::vector<std::string> command;
  // Unknown when the report comes from traces alone (memstage's own process was killed
  // before writing run.json) or describes a process memstage did not start.
  std::optional<int> exit_code;
  std::optional<int> signal;  // the fatal signal that ended the program
  std::optional<OomKill> oom_kill;
  double duration_s = 0;
  std::string allocator = "glibc";
  std::string mode = "full";
  // Full mode follows every block to its free; stats mode counts and does not, so its
  // leak figures are not measured (null in report.json, not "nothing leaked").
  bool leaks_measured = true;
  // A temporary is an allocation freed before the next one: only a mode that follows every
  // block sees it (not stats mode, and not sample mode, which follows some).
  bool temporaries_measured() const { return leaks_measured && !sampling; }
  // The tracer was attached to the process while it ran (`memstage attach`): what it
  // allocated before is unknown (its frees are ignored), and the leak figures count what
  // was allocated while attached and still held when the tracer detached.
  bool attached = false;
  std::optional<PythonRun> python;
  std::optional<SamplingReport> sampling;  // sample mode only
  MemoryFigures totals;
  // Sorted by start_s: one row per stage instance, or past StageGrouping's limit grouped
  // by path (stage indices elsewhere in the report name rows).
  std::vector<StageReport> stages;
  std::optional<StageGrouping> stage_grouping;  // only when instances were grouped
  std::vector<StackBytes> top_stacks_at_peak;  // at the run's peak
  std::vector<Leak> leaks;          // the program's largest first, then the runtime's
  RuntimeHeld runtime_held;         // not in totals.leaked_*; with what the user's suppressions match
  size_t leak_suppressions = 0;     // the user's suppression patterns the analysis applied
  std::vector<TimelinePoint> timeline;
  std::vector<ProcessReport> processes;  // the traced process first
  JobReport job;
  std::vector<Frame> frames;  // each distinct frame once (see FrameInterner)
  std::vector<StackNode> stack_nodes{StackNode{}};  // node 0: the empty stack
  std::vector<Stack> stacks;
  std::vector<StackStageFigures> stack_figures;
  std::optional<RamLimitReport> ram_limit;  // only when it was passed
  std::optional<uint64_t> ram_limit_bytes;  // the limit the run was given (--ram-limit), passed or not
  std::optional<DeviceReport> device;       // only when the program used device memory
  // Live bytes per stack over time; absent when the capture has no snapshots of them
  // (stats mode).
  std::optional<GrowthReport> growth;
  std::vector<std::string> warnings;  // a truncated trace, lost events, ...
  // Events the traced process's tracer could not record (also in the warnings, in words):
  // the count the metrics endpoint exposes.
  uint64_t lost_events = 0;
  // What the way it was captured cannot give (aggregate mode: no events to replay).
  std::vector<std::string> capture_notes;

  const Frame& frame(FrameIndex index) const { return frames[index]; }
  StackFrames frames_of(const Stack& stack) const { return StackFrames(stack_nodes, stack.innermost); }
};

// Where the program asked for a stack's memory: the stack from its first frame that is not
// allocation plumbing on; the whole stack when every frame is (or there is none).
// `is_allocator(FrameIndex)` says whether a frame is plumbing (Frame::allocator).
template <class IsAllocator>
StackFrames program_frames(const StackFrames& frames, IsAllocator is_allocator) {
  for (auto it = frames.begin(); it != frames.end(); ++it) {
    if (!is_allocator(*it)) return frames.from(it);
  }
  return frames;
}
inline StackFrames program_frames(const Report& report, const Stack& stack) {
  return program_frames(report.frames_of(stack), [&](FrameIndex id) { return report.frame(id).allocator; });
}

// The allocation site a stack is listed under: in a Python program the innermost Python
// frame (the script's line), else the first program frame. Nothing for an empty stack.
// `innermost_python()` gives the stack's innermost Python frame (Frame::kind "python"),
// however the caller finds it; nothing when it has none.
template <class InnermostPython, class IsAllocator>
std::optional<FrameIndex> allocation_site(const StackFrames& frames, InnermostPython innermost_python,
                                          IsAllocator is_allocator) {
  if (frames.empty()) return std::nullopt;
  if (const std::optional<FrameIndex> python = innermost_python()) return python;
  return program_frames(frames, is_allocator).front();
}
inline std::optional<FrameIndex> allocation_site(const Report& report, const Stack& stack) {
  const StackFrames frames = report.frames_of(stack);
  const auto innermost_python = [&]() -> std::optional<FrameIndex> {
    for (FrameIndex id : frames) {
      if (report.frame(id).kind == "python") return id;
    }
    return std::nullopt;
  };
  return allocation_site(frames, innermost_python, [&](FrameIndex id) { return report.frame(id).allocator; });
}

// The same questions for every stack of a large report (hundreds of thousands of stacks,
// ~100 frames each): what they read of a frame is kept in a byte per frame, so that going
// over the stacks does not reach into each Frame (a cache miss apiece); and each node's
// innermost Python frame, so that a stack's walk to its script's line stops at the first
// node an earlier walk passed (stacks share their outer frames; a walk from the innermost
// frame passes ~20 native ones in a Python program: docs/performance.md).
class FrameRoles {
 public:
  explicit FrameRoles(const Report& report) : report_(report), roles_(report.frames.size()) {
    for (size_t i = 0; i < report.frames.size(); ++i) {
      const Frame& f = report.frames[i];
      roles_[i] = static_cast<uint8_t>((f.allocator ? kAllocator : 0) | (f.kind == "python" ? kPython : 0));
    }
  }
  StackFrames program_frames(const Stack& stack) const {
    return reports::program_frames(report_.frames_of(stack), [this](FrameIndex id) { return is_allocator(id); });
  }
  // allocation_site(report, stack), the same answer.
  std::optional<FrameIndex> allocation_site(const Stack& stack) {
    const auto python = [&]() -> std::optional<FrameIndex> {
      const uint32_t frame = innermost_python(stack.innermost);
      return frame == kNoPython ? std::nullopt : std::optional<FrameIndex>(frame);
    };
    return reports::allocation_site(report_.frames_of(stack), python, [this](FrameIndex id) { return is_allocator(id); });
  }

 private:
  static constexpr uint8_t kAllocator = 1, kPython = 2;
  static constexpr uint32_t kNotKnown = 0, kNoPython = UINT32_MAX;
  bool is_allocator(FrameIndex id) const { return (roles_[id] & kAllocator) != 0; }
  bool is_python(FrameIndex id) const { return (roles_[id] & kPython) != 0; }
  // The innermost Python frame at `node` or outside it (kNoPython: none): out to the first
  // node known or a Python frame, then back in, each node on the way noted.
  uint32_t innermost_python(StackNodeIndex node) {
    const std::vector<StackNode>& nodes = report_.stack_nodes;
    if (python_at_.size() < nodes.size()) python_at_.resize(nodes.size(), kNotKnown);
    path_.clear();
    uint32_t found = kNoPython;
    for (StackNodeIndex n = node; n != 0; n = nodes[n].caller) {
      if (python_at_[n] != kNotKnown) {
        found = python_at_[n] == kNoPython ? kNoPython : python_at_[n] - 1;
        break;
      }
      path_.push_back(n);
      if (is_python(nodes[n].frame)) {
        found = nodes[n].frame;
        break;
      }
    }
    for (const StackNodeIndex n : path_) python_at_[n] = found == kNoPython ? kNoPython : found + 1;
    return found;
  }

  const Report& report_;
  std::vector<uint8_t> roles_;  // by the report's frame index
  std::vector<uint32_t> python_at_;  // by node: kNotKnown, kNoPython, or the frame + 1
  std::vector<StackNodeIndex> path_;
};

}  // namespace memstage::reports
