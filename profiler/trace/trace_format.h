// The memstage trace format, version 1. Writer: profiler/preload. Reader: trace_reader.h.
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
// killed (SIGKILL, OOM) leaves a file whose complete chunks are all readable: a reader
// uses every chunk up to the first incomplete or corrupt one and says where it stopped.
//
// Records: one tag byte, then fields. Integers are unsigned LEB128 varints ("u"), signed
// ones zigzag-encoded varints ("s"); strings are a varint length and the bytes. Records
// appear in the process's global event order (the tracer orders events from all threads
// by a process-wide sequence number before writing), so a reader replays them in order.
// Every record a reader needs to understand a later one comes before it: a stack or
// stage definition precedes its first use.
//
// Times are nanoseconds since the process's trace started (ProcessInfo.start_*_ns).
// Allocation events carry no time of their own: each happened at or after the latest
// Time record before it and before the next one (the tracer emits Time every sampling
// tick, 10 ms by default).
#pragma once

#include <cstdint>

namespace memstage::trace {

inline constexpr char kFileMagic[8] = {'M', 'E', 'M', 'S', 'T', 'A', 'G', 'E'};
inline constexpr uint32_t kFormatVersion = 1;
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

enum class Mode : uint8_t { kFull = 0, kStats = 1 };

enum class Tag : uint8_t {
  // First record of the file.
  // u pid, u parent_pid, u mode, u start_realtime_ns, u start_monotonic_ns, u page_bytes,
  // u max_depth, u sample_interval_ns, str exe, u argc, str argv[argc], str allocator
  kProcessInfo = 1,
  // u t_ns. Every allocation event after it happened at or after t_ns.
  kTime = 2,
  // The loaded modules, replacing the previous list: u count, then per module
  // str path, u load_bias, u segment_count, (u start, u end)[segment_count] for each
  // executable PT_LOAD segment, absolute addresses, end exclusive.
  kModules = 3,
  // Defines the next stack id (0, 1, 2, ...): u depth, then depth return addresses,
  // innermost first; the first absolute (u), the rest as differences (s) from the previous.
  kStack = 4,
  // Blocks are not named by address. Allocations are grouped by "allocation info":
  // (size, stack, stage instance). A block's free names its info, which is all the
  // analysis needs for exact live bytes, peaks, leaks and per-stage figures, and which
  // compresses to almost nothing (heaptrack's idea, with the stage added).
  //
  // malloc, calloc, memalign, new, ...: u allocation info id.
  kAlloc = 5,
  // free/delete of a block of this info: u allocation info id. Frees of blocks this
  // trace never saw allocated (inherited over fork, from before the tracer started) are
  // left out.
  kFree = 6,
  // The allocation half of a successful realloc (its free half is a kFree before it):
  // u allocation info id.
  kRealloc = 7,
  // Anonymous mmap: u address, u length, u stack id.
  kMmap = 8,
  // munmap of any range: u address, u length.
  kMunmap = 9,
  // A successful mremap: u old_address, u old_length, u new_address, u new_length,
  // u stack id. The new range counts as anonymous only if the old one was.
  kMremap = 10,
  // Defines the next stage name id (0, 1, ...): str name.
  kStageName = 11,
  // u stage name id, u t_ns. Opens a stage inside the innermost open one.
  kStageBegin = 12,
  // u t_ns. Closes the innermost open stage.
  kStageEnd = 13,
  // u t_ns, u rss_bytes, u tracer_bytes (the resident part of the tracer's own memory).
  kRss = 14,
  // The allocator's own accounting: u t_ns, u in_use_bytes, u resident_bytes,
  // u mapped_bytes (0 when unknown). glibc: mallinfo2 (uordblks + hblkhd,
  // arena + hblkhd, arena + hblkhd); jemalloc: stats.allocated/active/resident/mapped.
  kAllocatorStats = 15,
  // Counters kept in process (stats mode, every tick and at stage boundaries): u t_ns,
  // u allocations, u frees, u bytes_allocated. Stats mode's live heap is the allocator's
  // in-use figure (kAllocatorStats, every few ticks).
  kCounters = 16,
  // The process ended normally (exit or return from main): u t_ns.
  kEnd = 17,
  // A fatal signal arrived: u t_ns, u signal number. The process dies after it.
  kSignal = 18,
  // Events the tracer could not order and dropped: u count.
  kLost = 19,
  // Defines the next allocation info id (0, 1, 2, ...): u size, u stack id,
  // u stage instance + 1 (0: outside any stage). Stage instances are numbered by the
  // order of their kStageBegin records from 0.
  kAllocInfo = 20,
  // Frees the block of the latest kAlloc/kRealloc, with nothing allocated in between:
  // a temporary allocation (no fields).
  kFreeLast = 21,
  // RSS passed the limit `memstage run --ram-limit` set (recorded once): u t_ns,
  // u rss_bytes, u limit_bytes.
  kRamLimit = 22,
  // Names a Python code object (a function, a module's body): u code id (0, 1, 2, ...),
  // u first line, str file, str qualified name. Comes before the first stack that uses it.
  // In a stack, a Python frame is the "address" 1<<63 | code_id<<24 | line.
  kPythonCode = 23,
  // The process runs Python with Python frames recorded (once): str version (sys.version),
  // str allocator ("pymalloc": objects up to 512 bytes come from pymalloc's arenas, seen
  // as anonymous mmaps; "malloc": PYTHONMALLOC=malloc, every object through malloc).
  kPythonInfo = 24,
};

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
