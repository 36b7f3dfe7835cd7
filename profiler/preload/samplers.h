// What the tracer measures besides allocation events: resident set size and the
// allocator's own accounting. Neither allocates.
#pragma once

#include <cstdint>

namespace memstage::preload {

// Opens /proc/self/statm (again after fork: the old descriptor names the parent).
void open_rss_source();
// Resident set size in bytes, 0 if unreadable.
uint64_t read_rss_bytes();

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
