// Reads a memstage trace (trace_format.h) as a stream of callbacks, one chunk in memory
// at a time. A file cut short (the process was killed) is read up to its last complete
// chunk and reported as truncated; a damaged chunk with a good one after it is skipped
// (version 4 on: ReadSummary::damage); a file that is not a trace throws NotATraceError.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/trace/trace_format.h"

namespace memstage::trace {

class NotATraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProcessInfo {
  uint64_t pid = 0;
  uint64_t parent_pid = 0;
  Mode mode = Mode::kFull;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  uint64_t page_bytes = 4096;
  uint32_t max_depth = 0;
  uint64_t sample_interval_ns = 0;
  std::string exe;
  std::vector<std::string> argv;
  std::string allocator;
};

struct Segment {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

struct Module {
  std::string path;
  uint64_t load_bias = 0;
  std::vector<Segment> segments;
};

struct AllocatorStatsRecord {
  uint64_t t_ns = 0;
  uint64_t in_use_bytes = 0;
  uint64_t resident_bytes = 0;
  uint64_t mapped_bytes = 0;
};

struct CountersRecord {
  uint64_t t_ns = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
};

// A Python code object named by the tracer (a function or a module's body). Stacks refer
// to it by id (trace_format.h, python_frame_address).
struct PythonCode {
  uint64_t id = 0;
  uint64_t first_line = 0;
  std::string file;
  std::string function;  // qualified name (Class.method), "<module>" for a module's body
};

// From /proc/self/smaps_rollup (trace_format.h kMemoryShares).
struct MemorySharesRecord {
  uint64_t t_ns = 0;
  uint64_t pss_bytes = 0;
  uint64_t pss_anon_bytes = 0;
  uint64_t pss_file_bytes = 0;
  uint64_t pss_shmem_bytes = 0;
  uint64_t shared_bytes = 0;   // resident and mapped by other processes too
  uint64_t private_bytes = 0;  // resident and this process's alone (USS)
};

// Where the process stands in a distributed job (trace_format.h kJobPlace).
struct JobPlace {
  std::string host;
  std::optional<uint64_t> rank, local_rank, world_size;
};

struct PythonInfo {
  std::string version;    // sys.version
  std::string allocator;  // "pymalloc" or "malloc" (PYTHONMALLOC=malloc)
};

// A device block (kDeviceAlloc): `address` is a device pointer, or a handle for kPhysical.
struct DeviceAllocRecord {
  uint64_t t_ns = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
  DeviceMemory kind = DeviceMemory::kDevice;
  uint32_t stack = 0;
};

// Aggregate mode's records (trace_format.h, kAggHeap and after). Stages are stage
// instances, -1 outside any stage.
struct AggStackBytes {
  uint32_t stack = 0;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};
struct AggSnapshotRecord {
  uint64_t t_ns = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
  uint64_t temporary_allocations = 0;
};
struct AggSiteRecord {
  uint32_t stack = 0;
  int32_t stage = -1;
  uint64_t allocations = 0;
  uint64_t bytes_allocated = 0;
  uint64_t temporary_allocations = 0;
  uint64_t live_bytes = 0;
  uint64_t live_blocks = 0;
  // The three counts are increments since the site's previous record (version 5 on); else
  // totals so far.
  bool increments = false;
};
struct AggStageRecord {
  uint32_t stage = 0;
  bool closed = false;
  uint64_t frees = 0;
  uint64_t retained_bytes = 0;
  std::vector<AggStackBytes> top_stacks;  // at the stage's peak, largest first
};
struct AggPeakSiteRecord {
  uint32_t stack = 0;
  int32_t stage = -1;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  // A change to the run peak's sites (version 4 on); else one of a snapshot's full list.
  bool change = false;
};

// Receives the records in trace order. Every method has an empty default.
class TraceVisitor {
 public:
  virtual ~TraceVisitor() = default;
  // True once the visitor needs nothing more of the trace: the reader stops after the
  // chunk it is in (the summary then says nothing of the rest of the file).
  virtual bool done() const { return false; }
  virtual void on_process_info(const ProcessInfo&) {}
  virtual void on_time(uint64_t /*t_ns*/) {}
  virtual void on_modules(const std::vector<Module>&) {}
  // Version 2 traces store stacks as a tree, as the tracer does: node `id` (1, 2, 3...
  // in order) holds one return address, and its callers are the stack `parent` (an
  // earlier node, or 0: the empty stack). A stack is named by its innermost node; every
  // node comes before the first record that names it.
  virtual void on_stack_node(uint32_t /*id*/, uint32_t /*parent*/, uint64_t /*return_address*/) {}
  // A visitor that keeps every node's return address as on_stack_node gave it (node 0's is
  // 0) says so and answers for them: the reader, which needs a node's parent's to read it,
  // then keeps no copy of its own (one a node of the whole tree).
  virtual bool keeps_stack_node_addresses() const { return false; }
  virtual uint64_t stack_node_address(uint32_t /*id*/) const { return 0; }
  // Version 1 traces: a whole stack, innermost frame first, numbered from 0 in definition
  // order, before the first record that names its id.
  virtual void on_stack(uint32_t /*id*/, std::span<const uint64_t> /*return_addresses*/) {}
  // Allocation infos are numbered from 0 in definition order; `stage` is the stage
  // instance (numbered by the order stages begin, from 0) or -1 outside any stage.
  virtual void on_alloc_info(uint32_t /*id*/, uint64_t /*size*/, uint32_t /*stack*/, int32_t /*stage*/) {}
  // Version 6 on, right after on_alloc_info: the call that made the info's allocations and
  // the alignment it asked (log2; 0 for calls that ask none).
  virtual void on_alloc_call(uint32_t /*info*/, AllocCall /*call*/, uint8_t /*align_log2*/) {}
  // Version 6 on: the thread of the allocation events that follow (kThread).
  virtual void on_thread(uint32_t /*thread*/) {}
  virtual void on_alloc(uint32_t /*info*/, bool /*realloc*/) {}
  // `temporary`: the block freed is the latest allocation, nothing allocated since.
  virtual void on_free(uint32_t /*info*/, bool /*temporary*/) {}
  virtual void on_mmap(uint64_t /*address*/, uint64_t /*length*/, uint32_t /*stack*/) {}
  virtual void on_munmap(uint64_t /*address*/, uint64_t /*length*/) {}
  // An anonymous mapping of address space only (PROT_NONE or MAP_NORESERVE).
  virtual void on_mmap_reserved(uint64_t /*address*/, uint64_t /*length*/, uint32_t /*stack*/) {}
  virtual void on_mprotect(uint64_t /*address*/, uint64_t /*length*/, bool /*accessible*/) {}
  virtual void on_mremap(uint64_t /*old_address*/, uint64_t /*old_length*/, uint64_t /*new_address*/,
                         uint64_t /*new_length*/, uint32_t /*stack*/) {}
  virtual void on_stage_name(uint32_t /*id*/, const std::string& /*name*/) {}
  virtual void on_stage_begin(uint32_t /*name_id*/, uint64_t /*t_ns*/) {}
  virtual void on_stage_end(uint64_t /*t_ns*/) {}
  virtual void on_rss(uint64_t /*t_ns*/, uint64_t /*rss_bytes*/, uint64_t /*tracer_bytes*/) {}
  virtual void on_rss_high_water(uint64_t /*t_ns*/, uint64_t /*rss_bytes*/) {}
  virtual void on_inherited_frees_untold(uint64_t /*t_ns*/) {}
  virtual void on_allocator_stats(const AllocatorStatsRecord&) {}
  virtual void on_counters(const CountersRecord&) {}
  virtual void on_end(uint64_t /*t_ns*/) {}
  virtual void on_signal(uint64_t /*t_ns*/, int /*signal*/) {}
  virtual void on_lost(uint64_t /*count*/) {}
  virtual void on_ram_limit(uint64_t /*t_ns*/, uint64_t /*rss_bytes*/, uint64_t /*limit_bytes*/) {}
  virtual void on_python_code(const PythonCode&) {}
  virtual void on_python_info(const PythonInfo&) {}
  virtual void on_deep_bind_removed(const std::string& /*path*/) {}
  // The tracer dropped stage begins (and their ends) past a limit (trace_format.h).
  virtual void on_stage_limit(uint64_t /*t_ns*/, StageLimit /*limit*/, uint64_t /*limit_value*/,
                              uint64_t /*begins_dropped*/) {}
  virtual void on_device_alloc(const DeviceAllocRecord&) {}
  virtual void on_device_free(uint64_t /*t_ns*/, uint64_t /*address*/, DeviceMemory /*kind*/) {}
  virtual void on_device_cache(uint64_t /*t_ns*/, uint64_t /*reserved_bytes*/, uint64_t /*allocated_bytes*/) {}
  virtual void on_exec(uint64_t /*t_ns*/, const std::string& /*path*/) {}
  // Sample mode: the sampler's mean spacing in bytes (trace_format.h, kSampling).
  virtual void on_sampling(uint64_t /*rate_bytes*/) {}
  // Sample mode: the live heap, and the highest it was since the previous such record.
  virtual void on_heap_counters(uint64_t /*t_ns*/, uint64_t /*live_bytes*/, uint64_t /*high_bytes*/) {}
  virtual void on_agg_heap(uint64_t /*live_bytes*/, uint64_t /*high_bytes*/) {}
  virtual void on_agg_snapshot(const AggSnapshotRecord&) {}
  virtual void on_agg_site(const AggSiteRecord&) {}
  // A run of kAggSite records that follow one another in the trace, nothing between them,
  // in their order (a snapshot writes thousands): a visitor may look ahead in the run.
  virtual void on_agg_sites(std::span<const AggSiteRecord> sites) {
    for (const AggSiteRecord& site : sites) on_agg_site(site);
  }
  virtual void on_agg_stage(const AggStageRecord&) {}
  virtual void on_agg_peak_site(const AggPeakSiteRecord&) {}
  virtual void on_agg_ram_limit_stacks(const std::vector<AggStackBytes>&) {}
  // The tracer was attached to the running process at t_ns (trace_format.h, kAttached).
  virtual void on_attached(uint64_t /*t_ns*/) {}
  virtual void on_memory_shares(const MemorySharesRecord&) {}
  virtual void on_job_place(const JobPlace&) {}
};

// Damaged chunks a reader skipped to read on from the next good one (version 4 on), and
// what was lost with them: what they defined (implicitly numbered, so later ids still
// match) and the later records that named it, which are left out.
struct DamagedSpan {
  uint64_t offset = 0;  // where the damaged bytes start
  uint64_t bytes = 0;   // how many were skipped, up to the next good chunk
  std::string why;
};
struct DamageLoss {
  std::vector<DamagedSpan> spans;
  uint64_t stack_nodes = 0;      // defined in the damaged bytes (or below such a node)
  uint64_t alloc_infos = 0;
  uint64_t stage_names = 0;      // handed on as kLostInDamagedChunk
  uint64_t stage_instances = 0;  // handed on as stages of that name, or by the name kChunkStart gave
  uint64_t events_left_out = 0;  // later allocations and frees of lost allocation infos
  uint64_t skipped_bytes() const;
};

struct ReadSummary {
  uint32_t version = 0;  // the file's format version
  uint64_t chunks = 0;
  uint64_t records = 0;
  uint64_t file_bytes = 0;
  bool ended_cleanly = false;  // an End record was read
  bool truncated = false;      // the file stops inside a chunk, or a chunk is corrupt with no good one after it
  std::string truncation;      // what was wrong, for a warning
  DamageLoss damage;           // damaged chunks skipped, the file read on after each
};

// A trace whose process is still writing it. Where the file stops, the reader calls
// `wait()` and reads on while `writing()` says so; once it says no, the file is read to its
// end, and a chunk cut short there is a truncation as in a finished file. `wait` returns
// when more may have come: after a poll interval, or at once when the writer ended.
struct FollowWriter {
  std::function<bool()> writing;
  std::function<void()> wait;
};

// Calls `progress(bytes_read, file_bytes)` after each chunk, if given. With `follow`, the
// file may still be growing (see FollowWriter); file_bytes is then what was read.
ReadSummary read_trace(const std::string& path, TraceVisitor& visitor,
                       const std::function<void(uint64_t, uint64_t)>& progress = {},
                       const FollowWriter* follow = nullptr);

// True when the file starts with the trace magic.
bool looks_like_trace(const std::string& path);

}  // namespace memstage::trace
