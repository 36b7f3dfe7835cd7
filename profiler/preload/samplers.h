// What the tracer measures besides allocation events: resident set size and the
// allocator's own accounting. Neither allocates.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memstage::preload {

// Opens /proc/self/statm (again after fork: the old descriptor names the parent).
void open_rss_source();
// Resident set size in bytes, 0 if unreadable.
uint64_t read_rss_bytes();
// The kernel's high-water mark of the resident set size (VmHWM), in bytes; 0 if unreadable.
uint64_t read_rss_high_water_bytes();

// How much of RSS is shared with other processes (/proc/self/smaps_rollup), in bytes.
struct MemoryShares {
  uint64_t pss_bytes = 0, pss_anon_bytes = 0, pss_file_bytes = 0, pss_shmem_bytes = 0;
  uint64_t shared_bytes = 0;   // Shared_Clean + Shared_Dirty
  uint64_t private_bytes = 0;  // Private_Clean + Private_Dirty: the USS
};
// When smaps_rollup is asked for (read_memory_shares_if_due).
enum class SharesMoment {
  kTick,  // a sampling tick
  kEdge,  // a stage edge or a heap high
  kEnd,   // the process's end: read whatever the spacing, once (a short-lived worker's
          // copied pages are in its last figures, however loaded the machine)
};
// Reads smaps_rollup when it is due: at most one read per 200 times the last read's CPU time
// (the kernel walks every page table of the process: milliseconds per 100 MiB resident,
// against microseconds for statm), so that it takes at most 0.5 % of one core; and, at ticks,
// at least 100 ms apart. False when not due or unreadable.
bool read_memory_shares_if_due(uint64_t now_ns, SharesMoment moment, MemoryShares& out);

// Where the process stands in a distributed job, from its environment (trace_format.h
// kJobPlace): rank + 1 etc., 0 when not set. `host` receives the host name.
struct JobPlaceInEnv {
  uint64_t rank_plus_one = 0, local_rank_plus_one = 0, world_size_plus_one = 0;
  size_t host_length = 0;
};
JobPlaceInEnv read_job_place(char* host, size_t host_capacity);

// Aggregate mode's sampling tick at a run's age: `base_ns` for the first `full_rate_ticks`
// ticks, then age / full_rate_ticks, so each doubling of the age adds about
// full_rate_ticks * ln 2 ticks: a day's timeline is ~8 x a minute's, not 1,440 x. Only the
// timeline coarsens: each record keeps its interval's heap high, stage edges and heap highs
// are sampled where they happen. 0 ticks: `base_ns` always.
uint64_t aged_tick_interval_ns(uint64_t base_ns, uint64_t age_ns, uint32_t full_rate_ticks);

struct AllocatorStats {
  uint64_t in_use_bytes = 0;    // counted as used by the allocator (with rounding)
  uint64_t resident_bytes = 0;  // held from the OS
  uint64_t mapped_bytes = 0;    // 0 when the allocator can't say
  bool valid = false;
};

// Finds which allocator serves malloc (glibc, jemalloc, tcmalloc, mimalloc) by the
// symbols it exports. Call once the preloads are loaded.
void detect_allocator();
const char* allocator_name();
AllocatorStats read_allocator_stats();

}  // namespace memstage::preload
