#include "profiler/preload/tracer_memory.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace memstage::preload {
namespace {
std::atomic<uint64_t> g_mapped_bytes{0};
}

// Raw syscalls: the tracer's own mappings must not pass through its mmap interposer.
void* tracer_map(size_t bytes) {
  long r = syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r < 0 && r > -4096) return nullptr;
  g_mapped_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return reinterpret_cast<void*>(r);
}

void tracer_unmap(void* p, size_t bytes) {
  if (!p) return;
  syscall(SYS_munmap, p, bytes);
  g_mapped_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

uint64_t tracer_mapped_bytes() { return g_mapped_bytes.load(std::memory_order_relaxed); }

void* BumpArena::allocate(size_t bytes, size_t align) {
  uintptr_t p = (reinterpret_cast<uintptr_t>(cursor_) + align - 1) & ~(uintptr_t)(align - 1);
  if (!cursor_ || p + bytes > reinterpret_cast<uintptr_t>(end_)) {
    const size_t block = bytes + align > kBlockBytes ? bytes + align : kBlockBytes;
    auto* b = static_cast<uint8_t*>(tracer_map(block));
    if (!b) return nullptr;
    cursor_ = b;
    end_ = b + block;
    p = (reinterpret_cast<uintptr_t>(cursor_) + align - 1) & ~(uintptr_t)(align - 1);
  }
  cursor_ = reinterpret_cast<uint8_t*>(p + bytes);
  return reinterpret_cast<void*>(p);
}

}  // namespace memstage::preload
