#include "profiler/preload/samplers.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>

#include "profiler/preload/descriptors.h"

namespace memstage::preload {
namespace {

std::atomic<int> g_statm_fd{-1};
uint64_t g_page_bytes = 4096;

enum class Allocator { kGlibc, kJemalloc, kTcmalloc, kMimalloc };
Allocator g_allocator = Allocator::kGlibc;

using MallctlFn = int (*)(const char*, void*, size_t*, void*, size_t);
using TcPropertyFn = int (*)(const char*, size_t*);
using MiProcessInfoFn = void (*)(size_t*, size_t*, size_t*, size_t*, size_t*, size_t*,
                                 size_t*, size_t*);
MallctlFn g_mallctl = nullptr;
TcPropertyFn g_tc_property = nullptr;
MiProcessInfoFn g_mi_process_info = nullptr;

uint64_t parse_second_field(const char* s, const char* end) {
  while (s < end && *s != ' ') ++s;
  uint64_t v = 0;
  for (++s; s < end && *s >= '0' && *s <= '9'; ++s) v = v * 10 + (*s - '0');
  return v;
}

uint64_t jemalloc_stat(const char* name) {
  size_t value = 0, len = sizeof(value);
  return g_mallctl(name, &value, &len, nullptr, 0) == 0 ? value : 0;
}

uint64_t tcmalloc_property(const char* name) {
  size_t value = 0;
  return g_tc_property(name, &value) ? value : 0;
}

}  // namespace

void open_rss_source() {
  const int fd = adopt_descriptor(
      static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/statm", O_RDONLY | O_CLOEXEC)));
  // Threads may find it lost together: each opens its own, the last one stays.
  const int old = g_statm_fd.exchange(fd);
  if (old >= 0) release_descriptor(old);
  g_page_bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t read_rss_bytes() {
  // The program may have closed it (closefrom) and been handed the number since.
  if (descriptor_lost(g_statm_fd.load())) open_rss_source();
  const int fd = g_statm_fd.load();
  if (fd < 0) return 0;
  char buf[128];
  const long n = syscall(SYS_pread64, fd, buf, sizeof(buf), 0);
  if (n <= 0) return 0;
  return parse_second_field(buf, buf + n) * g_page_bytes;
}

void detect_allocator() {
  if ((g_mallctl = reinterpret_cast<MallctlFn>(dlsym(RTLD_DEFAULT, "mallctl")))) {
    g_allocator = Allocator::kJemalloc;
  } else if ((g_tc_property = reinterpret_cast<TcPropertyFn>(
                  dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty")))) {
    g_allocator = Allocator::kTcmalloc;
  } else if ((g_mi_process_info = reinterpret_cast<MiProcessInfoFn>(
                  dlsym(RTLD_DEFAULT, "mi_process_info")))) {
    g_allocator = Allocator::kMimalloc;
  } else {
    g_allocator = Allocator::kGlibc;
  }
}

const char* allocator_name() {
  switch (g_allocator) {
    case Allocator::kJemalloc: return "jemalloc";
    case Allocator::kTcmalloc: return "tcmalloc";
    case Allocator::kMimalloc: return "mimalloc";
    case Allocator::kGlibc: break;
  }
  return "glibc";
}

AllocatorStats read_allocator_stats() {
  AllocatorStats s;
  switch (g_allocator) {
    case Allocator::kGlibc: {
      const struct mallinfo2 mi = mallinfo2();
      s.in_use_bytes = mi.uordblks + mi.hblkhd;
      s.resident_bytes = mi.arena + mi.hblkhd;
      s.mapped_bytes = mi.arena + mi.hblkhd;
      s.valid = true;
      break;
    }
    case Allocator::kJemalloc: {
      // Statistics are cached; bumping the epoch refreshes them.
      uint64_t epoch = 1;
      size_t len = sizeof(epoch);
      g_mallctl("epoch", &epoch, &len, &epoch, len);
      s.in_use_bytes = jemalloc_stat("stats.allocated");
      s.resident_bytes = jemalloc_stat("stats.resident");
      s.mapped_bytes = jemalloc_stat("stats.mapped");
      s.valid = s.resident_bytes != 0;
      break;
    }
    case Allocator::kTcmalloc: {
      const uint64_t heap = tcmalloc_property("generic.heap_size");
      const uint64_t unmapped = tcmalloc_property("tcmalloc.pageheap_unmapped_bytes");
      s.in_use_bytes = tcmalloc_property("generic.current_allocated_bytes");
      s.resident_bytes = heap > unmapped ? heap - unmapped : 0;
      s.mapped_bytes = heap;
      s.valid = heap != 0;
      break;
    }
    case Allocator::kMimalloc: {
      size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
      g_mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
      // mimalloc reports what it committed, not what is in use: in use stays unknown.
      s.resident_bytes = commit;
      s.mapped_bytes = commit;
      s.valid = commit != 0;
      break;
    }
  }
  return s;
}

}  // namespace memstage::preload
