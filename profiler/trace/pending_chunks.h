// A process's records not yet in its trace, kept where its death cannot take them. The
// tracer's writer encodes records into a raw chunk buffer and writes it as a chunk every
// 50 ms or so (trace_format.h); a SIGKILL (the OOM killer's) used to take what waited there.
// The writer's two raw buffers (the chunk being filled and the one being compressed) are
// instead a MAP_SHARED mapping of a file in /dev/shm named after the trace (below), or,
// where that cannot be made, `<trace>.pending` beside it: its pages outlive the process. After the process died, `memstage
// run` (or `memstage report`, if memstage died too) appends the chunks it had not written
// (drain_pending_chunks) and removes the file; a process that ends normally removes it.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// The pending file of the trace at `trace_path` in shared memory (tmpfs, never written
// back): /dev/shm/memstage.<device>.<inode>.<trace file name>.pending, the device and inode
// of the trace's folder. Not in the output folder on a disk: writeback cleans its pages
// under the writer, each then faulted again (docs/performance.md). False where the folder
// is not found or the name does not fit. Without a C++ allocation: the tracer calls it too.
inline bool shared_memory_pending_path(const char* trace_path, char* out, size_t capacity) {
  const char* slash = strrchr(trace_path, '/');
  char folder[4200];
  const size_t folder_bytes = slash ? static_cast<size_t>(slash - trace_path) : 0;
  if (!slash || folder_bytes >= sizeof(folder)) return false;
  memcpy(folder, trace_path, folder_bytes);
  folder[folder_bytes] = '\0';
  struct stat st{};
  if (stat(folder_bytes ? folder : "/", &st) != 0) return false;
  const int n = snprintf(out, capacity, "/dev/shm/memstage.%llx.%llx.%s%s", static_cast<unsigned long long>(st.st_dev),
                         static_cast<unsigned long long>(st.st_ino), slash + 1, kPendingSuffix);
  return n > 0 && static_cast<size_t>(n) < capacity;
}
// The pending file's prefix for every trace of `folder` (memstage run clears old ones).
std::string shared_memory_pending_prefix(const std::string& folder);

struct PendingDrain {
  bool found = false;       // a pending file was there
  bool owner_alive = false;  // its process still runs: left alone
  uint32_t chunks = 0;       // chunks appended to the trace
  uint64_t raw_bytes = 0;    // their records' bytes
};

// Appends to the trace at `trace_path` the chunks its process had not written when it died,
// in their order, after its last whole chunk (a partial one cut off), and removes the
// pending file (in /dev/shm, else beside the trace). A process still alive (its pid, not a
// zombie) is left alone.
PendingDrain drain_pending_chunks(const std::string& trace_path);
// drain_pending_chunks for every trace in `dir`; chunks appended.
uint32_t drain_pending_in_dir(const std::string& dir);

}  // namespace memstage::trace
