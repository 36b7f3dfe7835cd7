#include "profiler/preload/tracer_memory.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace memstage::preload {
namespace {

std::atomic<uint64_t> g_small_bytes{0};

// Large mappings, whose resident part is asked from the kernel when RSS is sampled, a
// system call for every 16 MiB, unless it is known (tracer_resident_bytes).
constexpr size_t kLargeBytes = 64 * 1024;
constexpr int kMaxLarge = 4096;
enum class Residency : uint8_t {
  kAsked,    // asked at every sample
  kWhole,    // every page resident when last asked
  kSettled,  // written no more (tracer_settled): as asked then
};
struct Mapping {
  void* address;
  size_t bytes;
  Residency residency;
  uint64_t resident_bytes;  // when last asked
};
Mapping g_large[kMaxLarge];
int g_large_count = 0;
std::atomic_flag g_large_lock = ATOMIC_FLAG_INIT;

struct LargeLock {
  LargeLock() {
    while (g_large_lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~LargeLock() { g_large_lock.clear(std::memory_order_release); }
};

// The large mapping that starts at `p`, or nullptr. Under the lock.
Mapping* large_at(void* p) {
  for (int i = 0; i < g_large_count; ++i) {
    if (g_large[i].address == p) return &g_large[i];
  }
  return nullptr;
}

void note_mapped(void* p, size_t bytes) {
  if (bytes < kLargeBytes) {
    g_small_bytes.fetch_add(bytes, std::memory_order_relaxed);
    return;
  }
  LargeLock lock;
  if (g_large_count < kMaxLarge) {
    g_large[g_large_count++] = Mapping{p, bytes, Residency::kAsked, 0};
  } else {
    g_small_bytes.fetch_add(bytes, std::memory_order_relaxed);  // counted whole
  }
}

void note_unmapped(void* p, size_t bytes) {
  if (bytes >= kLargeBytes) {
    LargeLock lock;
    if (Mapping* m = large_at(p)) {
      *m = g_large[--g_large_count];
      return;
    }
  }
  g_small_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

// The pages of the large mapping at `p` replaced (counted already): asked again.
void note_replaced(void* p) {
  LargeLock lock;
  if (Mapping* m = large_at(p)) m->residency = Residency::kAsked;
}

}  // namespace

namespace {
// Raw syscalls: the tracer's own mappings must not pass through its mmap interposer.
void* map_counted(size_t bytes, int extra_flags) {
  long r = syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1, 0);
  if (r < 0 && r > -4096) return nullptr;
  note_mapped(reinterpret_cast<void*>(r), bytes);
  return reinterpret_cast<void*>(r);
}
}  // namespace

void* tracer_map(size_t bytes) { return map_counted(bytes, 0); }

void* tracer_remap(void* p, size_t old_bytes, size_t new_bytes) {
  long r = syscall(SYS_mremap, p, old_bytes, new_bytes, MREMAP_MAYMOVE);
  if (r < 0 && r > -4096) return nullptr;
  note_unmapped(p, old_bytes);
  note_mapped(reinterpret_cast<void*>(r), new_bytes);
  return reinterpret_cast<void*>(r);
}

namespace {
size_t huge_rounded(size_t bytes) { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }
}  // namespace

void* tracer_map_huge(size_t bytes, size_t small_bytes) {
  const size_t rounded = huge_rounded(bytes);
  // Mapped 2 MiB larger, then trimmed to the aligned part.
  long r = syscall(SYS_mmap, nullptr, rounded + kHugePageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r < 0 && r > -4096) return nullptr;
  const auto start = static_cast<uintptr_t>(r);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(uintptr_t)(kHugePageBytes - 1);
  if (aligned > start) syscall(SYS_munmap, start, aligned - start);
  syscall(SYS_munmap, aligned + rounded, start + kHugePageBytes - aligned);
  const size_t small = huge_rounded(small_bytes);
  // Without transparent huge pages (or with them off) it fails: 4 KiB pages then.
  if (small < rounded) syscall(SYS_madvise, aligned + small, rounded - small, MADV_HUGEPAGE);
  note_mapped(reinterpret_cast<void*>(aligned), rounded);
  return reinterpret_cast<void*>(aligned);
}

void tracer_unmap_huge(void* p, size_t bytes) { tracer_unmap(p, huge_rounded(bytes)); }

size_t tracer_table_mapped_bytes(size_t bytes) {
  return bytes >= kHugePageBytes ? huge_rounded(bytes) : (bytes + 4095) & ~size_t{4095};
}

void* tracer_map_table(size_t bytes) {
  if (bytes >= kHugePageBytes) return tracer_map_huge(bytes, 0);
  // Touched all over at once: its pages made in one call, not one fault each (a fault
  // costs several times a page populated).
  return map_counted(bytes, MAP_POPULATE);
}

void tracer_unmap_table(void* p, size_t bytes) { tracer_unmap(p, tracer_table_mapped_bytes(bytes)); }

bool tracer_map_at(void* address, size_t bytes) {
  long r = syscall(SYS_mmap, address, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (r < 0 && r > -4096) return false;
  note_mapped(address, bytes);
  return true;
}

void* tracer_map_shared_file(int fd, size_t bytes, void* address) {
  const int flags = (fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED) | (address ? MAP_FIXED : 0);
  long r = syscall(SYS_mmap, address, bytes, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (r < 0 && r > -4096) return nullptr;
  if (address) {
    note_replaced(address);
  } else {
    note_mapped(reinterpret_cast<void*>(r), bytes);
  }
  return reinterpret_cast<void*>(r);
}

void tracer_unmap(void* p, size_t bytes) {
  if (!p) return;
  syscall(SYS_munmap, p, bytes);
  note_unmapped(p, bytes);
}

namespace {
constexpr uint64_t kPageBytes = 4096;

uint64_t pages_of(const Mapping& m) { return (m.bytes + kPageBytes - 1) / kPageBytes; }

uint64_t pages_resident_bytes(const Mapping& m) {
  unsigned char residency[4096];  // one byte per page, 16 MiB of mapping at a time
  auto* start = static_cast<uint8_t*>(m.address);
  const uint64_t pages = pages_of(m);
  uint64_t resident = 0;
  for (uint64_t done = 0; done < pages; done += sizeof(residency)) {
    const uint64_t n = pages - done < sizeof(residency) ? pages - done : sizeof(residency);
    if (syscall(SYS_mincore, start + done * kPageBytes, n * kPageBytes, residency) != 0) break;
    for (uint64_t j = 0; j < n; ++j) resident += (residency[j] & 1) * kPageBytes;
  }
  return resident;
}

void ask_residency(Mapping& m) {
  m.resident_bytes = pages_resident_bytes(m);
  const bool whole = m.resident_bytes == pages_of(m) * kPageBytes;
  m.residency = whole ? Residency::kWhole : Residency::kAsked;
}
}  // namespace

uint64_t tracer_resident_bytes() {
  // A mapping wholly resident stays so unless the kernel takes pages back (swap): asked
  // again at every 64th sample only.
  constexpr uint32_t kWholeAskedEvery = 64;
  static uint32_t calls = 0;  // under the lock
  uint64_t resident = g_small_bytes.load(std::memory_order_relaxed);
  LargeLock lock;
  const bool ask_whole = ++calls % kWholeAskedEvery == 0;
  for (int i = 0; i < g_large_count; ++i) {
    Mapping& m = g_large[i];
    if (m.residency == Residency::kAsked || (m.residency == Residency::kWhole && ask_whole)) ask_residency(m);
    resident += m.resident_bytes;
  }
  return resident;
}

void tracer_settled(void* p) {
  LargeLock lock;
  if (Mapping* m = large_at(p)) {
    m->resident_bytes = pages_resident_bytes(*m);
    m->residency = Residency::kSettled;
  }
}

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
