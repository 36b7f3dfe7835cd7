#include "profiler/preload/pending_buffers.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

#include "profiler/preload/options.h"
#include "profiler/preload/tracer_memory.h"
#include "profiler/trace/pending_chunks.h"

namespace memstage::preload {
namespace {

struct Pending {
  uint8_t* region = nullptr;  // the header's page, then the two buffers
  size_t region_bytes = 0;
  trace::PendingHeader* header = nullptr;  // null while no file backs the region
  uint64_t chunk_ordinal = 0;              // of the chunk being filled
  char path[kMaxOutputDirBytes + 200] = {};
};
Pending g_pending;

trace::PendingBuffer* buffer_of(const uint8_t* raw) {
  if (!g_pending.header) return nullptr;
  const size_t index = static_cast<size_t>(raw - (g_pending.region + trace::kPendingHeaderBytes)) /
                       g_pending.header->buffer_bytes;
  return index < 2 ? &g_pending.header->buffers[index] : nullptr;
}

// In /dev/shm where it can be made there, beside the trace otherwise (pending_chunks.h).
int open_pending_file(const char* trace_path, size_t bytes) {
  int fd = -1;
  if (trace::shared_memory_pending_path(trace_path, g_pending.path, sizeof(g_pending.path))) {
    fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, g_pending.path,
                                  O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  }
  if (fd < 0) {
    snprintf(g_pending.path, sizeof(g_pending.path), "%s%s", trace_path, trace::kPendingSuffix);
    fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, g_pending.path,
                                  O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  }
  if (fd < 0) return -1;
  if (syscall(SYS_ftruncate, fd, bytes) != 0) {
    syscall(SYS_close, fd);
    syscall(SYS_unlinkat, AT_FDCWD, g_pending.path, 0);
    return -1;
  }
  return fd;
}

}  // namespace

uint8_t* pending_open(const char* trace_path, size_t buffer_bytes, uint64_t trace_bytes) {
  const size_t bytes = trace::pending_file_bytes(buffer_bytes);
  if (g_pending.region && g_pending.region_bytes != bytes) return nullptr;
  g_pending.header = nullptr;
  const int fd = open_pending_file(trace_path, bytes);
  void* mapped = fd >= 0 ? tracer_map_shared_file(fd, bytes, g_pending.region) : nullptr;
  if (fd >= 0) syscall(SYS_close, fd);
  if (!mapped) {
    if (fd >= 0) syscall(SYS_unlinkat, AT_FDCWD, g_pending.path, 0);
    // A mapping from before (a fork's child) stays, private: its buffers are still usable.
    return g_pending.region ? g_pending.region + trace::kPendingHeaderBytes : nullptr;
  }
  g_pending.region = static_cast<uint8_t*>(mapped);
  g_pending.region_bytes = bytes;
  auto* header = reinterpret_cast<trace::PendingHeader*>(g_pending.region);
  header->magic = trace::kPendingMagic;
  header->buffer_bytes = static_cast<uint32_t>(buffer_bytes);
  header->pid = static_cast<uint64_t>(getpid());
  header->written_bytes.store(trace_bytes, std::memory_order_release);
  header->chunks_written.store(0, std::memory_order_release);
  g_pending.header = header;
  g_pending.chunk_ordinal = ~0ull;  // the writer's pending_next_chunk makes its first chunk 0
  return g_pending.region + trace::kPendingHeaderBytes;
}

std::atomic<uint64_t>* pending_next_chunk(const uint8_t* raw) {
  static std::atomic<uint64_t> unbacked_bytes{0};
  trace::PendingBuffer* b = buffer_of(raw);
  if (!b) return &unbacked_bytes;
  // Emptied first: until its new ordinal is set, its old one (written already) hides it.
  b->bytes.store(0, std::memory_order_release);
  b->chunk_plus_one.store(++g_pending.chunk_ordinal + 1, std::memory_order_release);
  return &b->bytes;
}

void pending_written(const uint8_t* raw, uint64_t trace_bytes) {
  trace::PendingBuffer* b = buffer_of(raw);
  if (!b) return;
  g_pending.header->written_bytes.store(trace_bytes, std::memory_order_release);
  g_pending.header->chunks_written.store(b->chunk_plus_one.load(std::memory_order_relaxed), std::memory_order_release);
}

void pending_after_fork_child() {
  if (!g_pending.region) return;
  g_pending.header = nullptr;
  // Private pages in place, so that nothing the child does reaches the parent's file.
  if (!tracer_map_shared_file(-1, g_pending.region_bytes, g_pending.region)) g_pending.region = nullptr;
}

void pending_close() {
  if (!g_pending.header) return;
  g_pending.header = nullptr;
  syscall(SYS_unlinkat, AT_FDCWD, g_pending.path, 0);
}

}  // namespace memstage::preload
