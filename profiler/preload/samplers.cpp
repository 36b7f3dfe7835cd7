#include "profiler/preload/samplers.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/utsname.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "profiler/preload/descriptors.h"

namespace memstage::preload {
namespace {

// /proc/self/statm, read by any thread. Opened again after fork and when the program
// closed it: into the next of a few slots, the current one published by number (slot + 1,
// 0: none), so that a reader takes a whole identity, never one half rewritten.
constexpr uint32_t kStatmSlots = 8;
OwnedDescriptor g_statm[kStatmSlots];
std::atomic<uint32_t> g_statm_current{0};
std::atomic<uint32_t> g_statm_next{0};
std::atomic<uint64_t> g_shares_last_ns{0};  // trace time of the last smaps_rollup read (0: none)
std::atomic<uint64_t> g_shares_cost_ns{0};  // the CPU time it took
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

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// "Key:   123 kB" lines: the value of `key` in bytes, 0 when absent.
uint64_t kib_field(const char* text, const char* end, const char* key) {
  const size_t key_length = strlen(key);
  for (const char* line = text; line < end;) {
    const char* next = static_cast<const char*>(memchr(line, '\n', static_cast<size_t>(end - line)));
    if (!next) next = end;
    if (static_cast<size_t>(next - line) > key_length && memcmp(line, key, key_length) == 0 && line[key_length] == ':') {
      uint64_t v = 0;
      for (const char* c = line + key_length + 1; c < next; ++c) {
        if (*c >= '0' && *c <= '9') v = v * 10 + static_cast<uint64_t>(*c - '0');
      }
      return v * 1024;
    }
    line = next + 1;
  }
  return 0;
}

// The first of the variables that is set to a number: its value + 1, else 0.
uint64_t env_number_plus_one(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = getenv(name);
    if (!v || *v < '0' || *v > '9') continue;
    uint64_t n = 0;
    for (; *v >= '0' && *v <= '9'; ++v) n = n * 10 + static_cast<uint64_t>(*v - '0');
    if (*v == '\0') return n + 1;
  }
  return 0;
}

}  // namespace

uint64_t aged_tick_interval_ns(uint64_t base_ns, uint64_t age_ns, uint32_t full_rate_ticks) {
  if (full_rate_ticks == 0) return base_ns;
  const uint64_t aged = age_ns / full_rate_ticks;
  return aged > base_ns ? aged : base_ns;
}

bool read_memory_shares_if_due(uint64_t now_ns, SharesMoment moment, MemoryShares& out) {
  // A read costs milliseconds in a process of hundreds of libraries: reads at least 200
  // times their cost apart take 0.5 % of a core at most, often the program's own (a
  // single-threaded program's samples are taken on its thread; docs/performance.md).
  constexpr uint64_t kCostFactor = 200;
  uint64_t last = g_shares_last_ns.load(std::memory_order_relaxed);
  const uint64_t cost = g_shares_cost_ns.load(std::memory_order_relaxed);
  if (last != 0 && moment != SharesMoment::kEnd) {
    const uint64_t since = now_ns > last ? now_ns - last : 0;
    if (since < kCostFactor * cost || (moment == SharesMoment::kTick && since < 100'000'000)) return false;
  }
  // One thread reads at a time; the others skip this sample.
  if (!g_shares_last_ns.compare_exchange_strong(last, now_ns == 0 ? 1 : now_ns, std::memory_order_relaxed)) return false;
  // The cost is this thread's CPU time: a machine busy with other work stretches the wall
  // time of a read, not what it takes from the program.
  const uint64_t start = thread_cpu_ns();
  // Opened for each read, unlike statm: a read costs milliseconds, the open microseconds,
  // and a descriptor held for long is one more the program can close under the tracer.
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  char buf[4096];
  const long n = syscall(SYS_pread64, fd, buf, sizeof(buf), 0);
  syscall(SYS_close, fd);
  g_shares_cost_ns.store(thread_cpu_ns() - start, std::memory_order_relaxed);
  if (n <= 0) return false;
  const char* end = buf + n;
  out.pss_bytes = kib_field(buf, end, "Pss");
  out.pss_anon_bytes = kib_field(buf, end, "Pss_Anon");
  out.pss_file_bytes = kib_field(buf, end, "Pss_File");
  out.pss_shmem_bytes = kib_field(buf, end, "Pss_Shmem");
  out.shared_bytes = kib_field(buf, end, "Shared_Clean") + kib_field(buf, end, "Shared_Dirty");
  out.private_bytes = kib_field(buf, end, "Private_Clean") + kib_field(buf, end, "Private_Dirty");
  return out.pss_bytes != 0;
}

JobPlaceInEnv read_job_place(char* host, size_t host_capacity) {
  JobPlaceInEnv place;
  place.rank_plus_one = env_number_plus_one({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
  place.local_rank_plus_one = env_number_plus_one({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"});
  place.world_size_plus_one = env_number_plus_one({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  utsname names{};
  if (host_capacity && syscall(SYS_uname, &names) == 0) {
    place.host_length = strnlen(names.nodename, sizeof(names.nodename));
    if (place.host_length > host_capacity) place.host_length = host_capacity;
    memcpy(host, names.nodename, place.host_length);
  }
  return place;
}

void open_rss_source() {
  const uint32_t slot = g_statm_next.fetch_add(1, std::memory_order_relaxed) % kStatmSlots;
  g_statm[slot] = adopt_descriptor(
      static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/statm", O_RDONLY | O_CLOEXEC)));
  // Threads may find it lost together: each opens its own, the last one stays.
  const uint32_t old = g_statm_current.exchange(slot + 1, std::memory_order_acq_rel);
  if (old != 0 && old != slot + 1) release_descriptor(g_statm[old - 1]);
  // After fork: the child reads its own smaps_rollup at its first sample.
  g_shares_last_ns.store(0, std::memory_order_relaxed);
  g_shares_cost_ns.store(0, std::memory_order_relaxed);
  g_page_bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t read_rss_bytes() {
  uint32_t current = g_statm_current.load(std::memory_order_acquire);
  if (current == 0) return 0;
  // The program may have closed it (closefrom), and it or the tracer been handed the
  // number since.
  if (g_statm[current - 1].fd >= 0 && !still_owned(g_statm[current - 1])) {
    open_rss_source();
    current = g_statm_current.load(std::memory_order_acquire);
  }
  const int fd = g_statm[current - 1].fd;
  if (fd < 0) return 0;
  char buf[128];
  const long n = syscall(SYS_pread64, fd, buf, sizeof(buf), 0);
  if (n <= 0) return 0;
  return parse_second_field(buf, buf + n) * g_page_bytes;
}

uint64_t read_rss_high_water_bytes() {
  // Opened each time: asked once per trace (its end), so no descriptor is kept.
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return 0;
  char buf[4096];
  const long n = syscall(SYS_pread64, fd, buf, sizeof(buf), 0);
  syscall(SYS_close, fd);
  return n > 0 ? kib_field(buf, buf + n, "VmHWM") : 0;
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
