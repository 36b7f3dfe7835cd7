// A process's records not yet in its trace, kept where its death cannot take them. The
// tracer's writer encodes records into a raw chunk buffer and writes it as a chunk every
// 50 ms or so (trace_format.h); a SIGKILL (the OOM killer's) used to take what waited there.
// The writer's two raw buffers (the chunk being filled and the one being compressed) are
// instead a MAP_SHARED mapping of a file beside the trace, `<trace>.pending`: its pages are
// the kernel's page cache, which outlives the process. After the process died, `memstage
// run` (or `memstage report`, if memstage died too) appends the chunks it had not written
// (drain_pending_chunks) and removes the file; a process that ends normally removes it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace memstage::trace {

inline constexpr char kPendingSuffix[] = ".pending";
inline constexpr uint32_t kPendingMagic = 0x4450534d;  // "MSPD"
inline constexpr size_t kPendingHeaderBytes = 4096;    // the buffers start a page in

// Written by the dying process only; each field stored after what it describes, so that
// whatever instant the process stops at, a reader sees whole records and whole chunks.
struct PendingBuffer {
  std::atomic<uint64_t> chunk_plus_one;  // the ordinal of the chunk it holds, + 1 (0: none)
  std::atomic<uint64_t> bytes;           // raw record bytes in it, all whole records
};
struct PendingHeader {
  uint32_t magic;
  uint32_t buffer_bytes;  // each buffer's capacity
  uint64_t pid;
  std::atomic<uint64_t> written_bytes;   // the trace file's length after its last whole chunk
  std::atomic<uint64_t> chunks_written;  // chunks written whole, the file header not counted
  PendingBuffer buffers[2];
};
static_assert(sizeof(PendingHeader) <= kPendingHeaderBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline size_t pending_file_bytes(size_t buffer_bytes) { return kPendingHeaderBytes + 2 * buffer_bytes; }

struct PendingDrain {
  bool found = false;       // a pending file was there
  bool owner_alive = false;  // its process still runs: left alone
  uint32_t chunks = 0;       // chunks appended to the trace
  uint64_t raw_bytes = 0;    // their records' bytes
};

// Appends to the trace at `trace_path` the chunks its process had not written when it died,
// in their order, after its last whole chunk (a partial one cut off), and removes the
// pending file. A process still alive (its pid, not a zombie) is left alone.
PendingDrain drain_pending_chunks(const std::string& trace_path);
// drain_pending_chunks for every trace in `dir` with a pending file; chunks appended.
uint32_t drain_pending_in_dir(const std::string& dir);
// Appends `raw_bytes` of records as one chunk after the trace's last whole chunk (what
// follows it, a chunk cut off by a kill, is cut away). False where it cannot be written.
bool append_chunk(const std::string& trace_path, const uint8_t* raw, size_t raw_bytes);

}  // namespace memstage::trace
