// The memstage trace format, version 6. Writer: profiler/preload. Reader: trace_reader.h.
//
// A trace file is one process's record (a forked child or an exec'd program writes its
// own file next to its parent's):
//
//   FileHeader                      16 bytes, little endian
//   Chunk*                          until end of file
//
//   Chunk  = ChunkHeader (12 bytes) + `compressed_bytes` of one zstd frame (with its
//            content checksum) that decompresses to `raw_bytes` of records.
//
// Chunks are written whole with one write(2) each, about every 50 ms, so a process that is
// killed (SIGKILL, OOM) leaves a file whose complete chunks are all readable. Since
// version 4 each chunk's records open with a kChunkStart, the counts of what the records
// before it defined, so a reader that meets a damaged chunk skips to the next chunk that
// checks out (its magic, its size, its zstd checksum) and reads on from there; before
// version 4 it stops at the first incomplete or corrupt chunk. Either way it says where.
// The records encoded and not yet written survive the kill in a pending file, appended as
// chunks after the death by `memstage run` or `memstage report` (pending_chunks.h).
//
// Records: one tag byte, then fields. Integers are unsigned LEB128 varints ("u"), signed
// ones zigzag-encoded varints ("s"); strings are a varint length and the bytes. Each
// kind's fields are defined once, in trace_records.h, which every encoder and the reader
// use; the comments below say what each kind means. Records
// appear in the process's global event order (the tracer orders events from all threads
// by a process-wide event number before writing), so a reader replays them in order.
// Every record a reader needs to understand a later one comes before it: a stack node or
// stage definition precedes its first use.
//
// Version 2 stores stacks as a tree (kStackNode); version 1 stored each stack whole
// (kStack). The reader reads both and hands the analysis whole stacks either way. Version 3
// adds kTemporary, version 4 kChunkStart, version 6 kInheritedFreesUntold, kCallAllocInfo and
// kThread (what a replay needs: which call made each block, with what alignment, on which
// thread).
//
// Times are nanoseconds since the process's trace started (ProcessInfo.start_*_ns).
// Allocation events carry no time of their own: each happened at or after the latest
// Time record before it and before the next one (the tracer emits Time every sampling
// tick, 10 ms by default).
#pragma once

#include <cstdint>

namespace memstage::trace {

inline constexpr char kFileMagic[8] = {'M', 'E', 'M', 'S', 'T', 'A', 'G', 'E'};
inline constexpr double kNsPerS = 1e9;  // trace times are nanoseconds; reports speak seconds
// A process's trace in the output folder (printf formats of folder and pid): the first
// program it runs writes trace.<pid>.mst, the n-th one it exec's trace.<pid>.<n>.mst.
inline constexpr char kTracePathFormat[] = "%s/trace.%ld.mst";
inline constexpr char kExecTracePathFormat[] = "%s/trace.%ld.%d.mst";
inline constexpr uint32_t kFormatVersion = 6;
// From this version a forked child of stats and sample modes leaves out its frees of
// inherited blocks, but where kInheritedFreesUntold says otherwise.
inline constexpr uint32_t kFirstVersionTellingInheritedFrees = 6;
// From this version full mode's allocation infos say their call (kCallAllocInfo) and the
// allocation events their thread (kThread).
inline constexpr uint32_t kFirstVersionWithCallsAndThreads = 6;
inline constexpr uint32_t kFirstVersionWithChunkStarts = 4;
// From this version kAggPeakSite records are changes (kAggPeakSite below).
inline constexpr uint32_t kFirstVersionWithPeakSiteChanges = 4;
// From this version kAggSite's counts are increments (kAggSite below).
inline constexpr uint32_t kFirstVersionWithSiteIncrements = 5;
inline constexpr uint32_t kOldestReadableVersion = 1;
inline constexpr uint32_t kChunkMagic = 0x4b43534d;  // "MSCK"
// A chunk larger than this is treated as corrupt (the writer never makes one).
inline constexpr uint32_t kMaxChunkRawBytes = 64u << 20;

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t flags;  // reserved, 0
};
static_assert(sizeof(FileHeader) == 16);

struct ChunkHeader {
  uint32_t magic;
  uint32_t compressed_bytes;
  uint32_t raw_bytes;
};
static_assert(sizeof(ChunkHeader) == 12);

// kAggregate: every allocation is unwound as in full mode, but the tracer folds the events
// into figures per (stack, stage instance) in process and writes those (the kAgg*
// records) instead of the events, so the trace grows with distinct stacks and stages, not
// with the run's length.
// kSample: allocations sampled by bytes (a Poisson process over the bytes allocated, see
// kSampling), with exact heap counters (kHeapCounters) and call counters (kCounters).
// kStats: no events, the same heap counters and call counters as kSample.
enum class Mode : uint8_t { kFull = 0, kStats = 1, kAggregate = 2, kSample = 3 };
// The mode as `memstage run --mode` and report.json name it.
inline const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kStats: return "stats";
    case Mode::kAggregate: return "aggregate";
    case Mode::kSample: return "sample";
    default: return "full";
  }
}

enum class Tag : uint8_t {
  // First record of the file: the process, the tracer's settings, the allocator.
  kProcessInfo = 1,
  // Every allocation event after it happened at or after its t_ns.
  kTime = 2,
  // The loaded modules, replacing the previous list, with their executable PT_LOAD
  // segments (absolute addresses, end exclusive).
  kModules = 3,
  // Version 1 only: defines the next stack id (0, 1, 2, ...): return addresses,
  // innermost first.
  kStack = 4,
  // Blocks are not named by address. Allocations are grouped by "allocation info":
  // (size, stack, stage instance). A block's free names its info, which is all the
  // analysis needs for exact live bytes, peaks, leaks and per-stage figures, and which
  // compresses to almost nothing (heaptrack's idea, with the stage added).
  //
  // malloc, calloc, memalign, new, ...: names the allocation info.
  kAlloc = 5,
  // free/delete of a block of this allocation info. Frees of blocks this
  // trace never saw allocated (inherited over fork, from before the tracer started) are
  // left out.
  kFree = 6,
  // The allocation half of a successful realloc (its free half is a kFree before it).
  kRealloc = 7,
  // Anonymous mmap, with the stack that made it.
  kMmap = 8,
  // munmap of any range.
  kMunmap = 9,
  // A successful mremap. The new range counts as anonymous only if the old one was.
  kMremap = 10,
  // Defines the next stage name id (0, 1, ...): at most kMaxStageNameBytes.
  kStageName = 11,
  // Opens a stage inside the innermost open one (at most kMaxStageDepth open).
  kStageBegin = 12,
  // Closes the innermost open stage.
  kStageEnd = 13,
  // RSS, and tracer_bytes: the resident part of the tracer's own memory.
  kRss = 14,
  // The allocator's own accounting (mapped_bytes 0 when unknown). glibc: mallinfo2
  // (uordblks + hblkhd, arena + hblkhd, arena + hblkhd); jemalloc:
  // stats.allocated/active/resident/mapped.
  kAllocatorStats = 15,
  // Counters kept in process (stats and sample modes, with each kHeapCounters: every tick,
  // right before a stage begins and after, before it ends). Stats-mode traces written before
  // stats mode counted the heap have no kHeapCounters: their live heap is the allocator's
  // in-use figure (kAllocatorStats).
  kCounters = 16,
  // The process ended normally (exit or return from main).
  kEnd = 17,
  // A fatal signal arrived. The process dies after it.
  kSignal = 18,
  // Events the tracer could not order and dropped.
  kLost = 19,
  // Defines the next allocation info id (0, 1, 2, ...): size, stack id, stage instance
  // + 1 (0: outside any stage). Stage instances are numbered by the order of their
  // kStageBegin records from 0. The same triple may be defined again under a new id (the
  // tracer remembers a bounded number of them).
  kAllocInfo = 20,
  // Frees the block of the latest kAlloc/kRealloc, with nothing allocated in between:
  // a temporary allocation (no fields).
  kFreeLast = 21,
  // The program's RSS (the tracer's own memory left out) passed the limit
  // `memstage run --ram-limit` set (recorded once).
  kRamLimit = 22,
  // Names a Python code object (a function, a module's body) by id (0, 1, 2, ...). Comes
  // before the first stack that uses it. In a stack, a Python frame is the "address"
  // 1<<63 | code_id<<24 | line.
  kPythonCode = 23,
  // The process runs Python with Python frames recorded (once): its sys.version, and its
  // allocator ("pymalloc": objects up to 512 bytes come from pymalloc's arenas, seen as
  // anonymous mmaps; "malloc": PYTHONMALLOC=malloc, every object through malloc).
  kPythonInfo = 24,
  // The program dlopen()ed a module (the path it gave) with RTLD_DEEPBIND: the module's
  // own libc would come before the tracer for its malloc and free, so the tracer removed
  // the flag (the module's symbols then bind as without it).
  kDeepBindRemoved = 25,
  // A stage limit was hit: stage begins were dropped, with their ends, while past it (so
  // that allocations land in the enclosing stage, and begins and ends stay paired). Says
  // which limit (StageLimit), its value and the begins dropped so far; written at the
  // first drop of each limit and again at the end with the total.
  kStageLimit = 26,
  // Device memory (a CUDA driver or runtime allocation call), with its time and stack:
  // the address is a device pointer, or for DeviceMemory::kPhysical the allocation handle.
  kDeviceAlloc = 27,
  // Its free, naming the block by address and the DeviceMemory kind of the call (a
  // kPhysical free names a handle; any other kind, a device pointer).
  kDeviceFree = 28,
  // A caching allocator's own figures (PyTorch's torch.cuda.memory_stats, all devices),
  // read by the Python stage markers: bytes reserved from the driver, bytes in use by
  // tensors.
  kDeviceCache = 29,
  // Version 2: defines the next stack node id (1, 2, 3, ...; node 0, the root, is the empty
  // stack and never defined) by its parent (as the distance back to it, >= 1) and its
  // return address (as the difference from the parent's; the root's is 0). A node is the
  // stack of its return address, innermost, called from its parent's stack; events name
  // a stack by its innermost node.
  kStackNode = 30,
  // The process calls exec (execve, execvp, fexecve, ...) on this path, the last record
  // before the new program replaces it: the new program writes a trace of its own, with
  // the same pid (trace.<pid>.<n>.mst). A failed exec is followed by more records.
  kExec = 31,
  // An anonymous mmap that reserves address space rather than memory: PROT_NONE or
  // MAP_NORESERVE (V8, Go, the JVM and sanitizers reserve gigabytes this way). It counts
  // as memory only where a kMprotect makes it accessible. Fields as kMmap's.
  kMmapReserved = 32,
  // A successful mprotect: the range becomes accessible (any of read, write, execute) or
  // not (PROT_NONE). Only anonymous mappings the trace knows of are affected.
  kMprotect = 33,
  // How much of RSS is shared with other processes, from /proc/self/smaps_rollup: PSS (a
  // page shared by n processes counts 1/n) and its anonymous, file and shmem parts, the
  // shared and the private resident bytes. Costly to read (the kernel walks every page
  // table), so sampled less often than RSS (samplers.cpp says how) and at stage edges.
  kMemoryShares = 34,
  // Where the process stands in a distributed job, read from its environment at start
  // (once, after kProcessInfo): the host name; rank, local rank and world size, each
  // + 1 (0: not set). Rank: RANK (torchrun), OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID;
  // local rank: LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID; world size:
  // WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS.
  kJobPlace = 35,
  // Sample mode (once, before any allocation event): kAlloc, kRealloc and kFree name only
  // the blocks sampled. The sampler marks the points of a Poisson process over the bytes
  // allocated, one every rate_bytes on average (an exponential countdown of bytes per
  // thread): an allocation of size s holding a point is sampled, with probability
  // 1 - exp(-s / rate_bytes); one of rate_bytes or more always is. Its size is exact; a
  // reader unbiases by the inverse of that probability.
  kSampling = 36,
  // Stats and sample modes: the live heap (usable sizes of the blocks live, counted on
  // every malloc and free, sampled or not) and the highest it was since the previous kHeapCounters.
  // Written every tick, right before a stage begins and after, before a stage ends, and at
  // heap highs; so a stage's peak is the highest high_bytes inside it, and the run's the
  // highest of all. Threads count on their own and add up every kHeapFoldBytes: in a program
  // of several threads a figure can miss up to that much per other thread.
  kHeapCounters = 37,
  // The kernel's high-water mark of RSS (VmHWM), at the end of the trace (exit, exec, a
  // fatal signal). RSS is sampled at ticks and heap highs, which a short spike between two
  // samples escapes; the peak RSS is never below this. Its time is unknown.
  kRssHighWater = 38,
  // Stats and sample modes, a forked child (version 6 on): from here its frees of the blocks
  // it inherited count against its heap, its table of its own blocks given up (out of
  // memory). Before it, and in every version-6 child without it, they are left out.
  kInheritedFreesUntold = 39,

  // Aggregate mode (Mode::kAggregate) writes no kAllocInfo, kAlloc, kFree, kRealloc or
  // kFreeLast; these records stand for them. Tags between the kinds are unused.
  //
  // The heap between two other records: written before any record that follows heap
  // events, with the live bytes then and the highest they reached since the previous
  // kAggHeap (within one interval the time and the innermost stage are constant, so the
  // peaks, their times and the timeline are those full mode computes from the events).
  kAggHeap = 40,
  // Closes a snapshot (every --snapshot-interval, at exit, exec and fatal signals): the
  // totals then. A chunk is written right after it, so a killed process leaves a trace
  // that reads up to its last snapshot. kAggSite and kAggStage records apply at once (each
  // carries absolute figures); kAggPeakSite records before it update the run peak's.
  kAggSnapshot = 41,
  // A (stack, stage instance) whose figures changed since the previous snapshot: its
  // allocations, bytes and temporaries, and its live bytes and blocks now. Live bytes per
  // site at each snapshot are the growth over time. From version 5 the three counts are
  // increments since the site's previous kAggSite (before, totals so far): the tracer
  // writes and forgets a site that holds nothing, and takes it up again from zero when it
  // is met again, so that it keeps the sites in use, not every one ever met.
  kAggSite = 42,
  // A stage instance's own figures the sites cannot give: frees made while it was the
  // innermost stage, retained bytes at its end (live bytes allocated in it and the stages
  // inside it), and the stacks holding the most memory at its peak (by stack, largest
  // first; none when the heap never rose above its level at the stage's begin). Written
  // when it ends, and for open stages with each snapshot (`closed` 0).
  kAggStage = 43,
  // A (stack, stage instance) holding memory at the run's heap peak, written when the peak
  // moved since the last snapshot. From version 4 only the sites whose figures at the peak
  // changed since they were last written (0 blocks: none held there any more), the others
  // as they were; before, a snapshot's records listed every one and replaced the last.
  kAggPeakSite = 44,
  // The stacks holding the most memory when RSS passed --ram-limit (after kRamLimit).
  kAggRamLimitStacks = 45,

  // The tracer was attached to a process already running (`memstage attach`), at this
  // time: what the process allocated before it is unknown to the trace (its frees are not
  // recorded), and what is live at the trace's end is what was allocated since and not
  // freed by the time it detached, not necessarily a leak.
  kAttached = 50,
  // Version 3: an allocation freed before anything else was written, a temporary: kAlloc
  // and kFreeLast in one record (its fields are kAlloc's; the tracer turns the kAlloc it
  // wrote into one when the free comes next). A churn's temporaries are half its blocks.
  kTemporary = 60,

  // Version 4: the first record of every chunk, and only there: the first id of each table
  // numbered by definition order that the chunk's records may extend (the next stack node,
  // allocation info, stage name and stage instance) and the stages open, outermost first,
  // each as (instance, name id). A reader that skipped a damaged chunk takes its counters
  // from the next good chunk's kChunkStart; what the lost records defined is unknown.
  kChunkStart = 70,

  // Version 6, full mode: kAllocInfo's fields, then the call that made the allocations of
  // this info: AllocCall | log2(alignment asked) << 8 (0 for the calls that ask none). The
  // tracer writes it in place of kAllocInfo; an info is a distinct (size, stack, stage,
  // call), which a call site almost always keeps, so the infos hardly multiply.
  kCallAllocInfo = 71,
  // Version 6, full mode: the allocation events (kAlloc, kRealloc, kFree, kFreeLast,
  // kTemporary) after it until the next kThread were made by this thread: the tracer's
  // number for it, small, reused by a thread that starts after its holder ended and the
  // writer drained it. Written only where the thread changes, and again first in every chunk
  // that has such events (a reader may skip a damaged chunk). A kTemporary is one thread's
  // allocation and free; a kFreeLast, like a kFree, frees on the thread named last.
  kThread = 72,
};

// The call that made an allocation (kCallAllocInfo); kUnknown in traces before version 6.
enum class AllocCall : uint8_t {
  kUnknown = 0,
  kMalloc = 1,
  kCalloc = 2,  // zeroed: its pages are the kernel's zero pages until written
  kRealloc = 3,  // reallocarray too
  kPosixMemalign = 4,
  kAlignedAlloc = 5,
  kMemalign = 6,
  kValloc = 7,
  kPvalloc = 8,   // valloc of the size rounded up to whole pages
  kNew = 9,       // operator new (any form; aligned ones with their alignment)
  kNewArray = 10,  // operator new[]
};
inline constexpr uint8_t kMaxAllocCall = 10;
// Thread numbers (kThread) are below this: the tracer's table of thread states is shorter.
inline constexpr uint64_t kMaxTraceThreads = 1u << 16;
// kCallAllocInfo's call field, and back.
inline constexpr uint64_t encode_alloc_call(AllocCall call, uint8_t align_log2) {
  return static_cast<uint64_t>(call) | static_cast<uint64_t>(align_log2) << 8;
}
inline constexpr AllocCall alloc_call_of(uint64_t field) { return static_cast<AllocCall>(field & 0xff); }
inline constexpr uint8_t align_log2_of(uint64_t field) { return static_cast<uint8_t>(field >> 8); }

// What a reader hands on for what a damaged chunk defined and a later record names: the
// "return address" of a stack frame lost with it (bit 62: no user-space address has it,
// and bit 63, a Python frame's, is clear), and the name of a stage.
inline constexpr uint64_t kLostFrameAddress = 1ull << 62;
inline constexpr char kLostInDamagedChunk[] = "[unknown: lost in damaged chunk]";

// Sample mode: what a thread counts before adding it to the process's live heap.
inline constexpr uint64_t kHeapFoldBytes = 16 * 1024;

// What a device block is (kDeviceAlloc).
enum class DeviceMemory : uint8_t {
  kDevice = 0,    // cuMemAlloc, cuMemAllocPitch, cudaMalloc, cudaMallocPitch
  kManaged = 1,   // cuMemAllocManaged, cudaMallocManaged
  kAsync = 2,     // stream-ordered, from a pool: cuMemAllocAsync, cudaMallocAsync, ...FromPoolAsync
  kPhysical = 3,  // cuMemCreate: physical memory for the virtual memory management API
};

// The tracer's stage limits (kStageLimit). A reader treats deeper nesting or a longer
// name as a corrupt record: the tracer never writes one.
enum class StageLimit : uint8_t { kDistinctNames = 0, kDepth = 1 };
inline constexpr uint32_t kMaxStageNames = 65536;
inline constexpr uint32_t kMaxStageDepth = 256;
inline constexpr uint32_t kMaxStageNameBytes = 4096;

// A Python frame inside a stack: bit 63 set (native addresses never have it), the code
// object's id (kPythonCode) in bits 24..62, the line in bits 0..23.
inline constexpr uint64_t python_frame_address(uint64_t code_id, uint32_t line) {
  return (1ull << 63) | (code_id << 24) | (line & 0xffffffu);
}
inline constexpr bool is_python_frame(uint64_t address) { return (address >> 63) != 0; }
inline constexpr uint64_t python_frame_code_id(uint64_t address) { return (address << 1) >> 25; }
inline constexpr uint32_t python_frame_line(uint64_t address) { return static_cast<uint32_t>(address & 0xffffffu); }
static_assert(python_frame_code_id(python_frame_address(12345, 678)) == 12345);
static_assert(python_frame_line(python_frame_address(12345, 678)) == 678);

}  // namespace memstage::trace
