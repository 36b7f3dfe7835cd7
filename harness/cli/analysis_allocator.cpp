// The allocator of memstage's own process (not of the programs it traces: they are exec'd
// with their own). The analysis of a large trace makes millions of small blocks (stack
// tree nodes, per-site figures, the report's stacks) and touches hundreds of MiB once:
// with glibc's malloc most of its time went to page faults and malloc's bookkeeping
// (docs/performance.md). jemalloc is linked in (harness/cli/CMakeLists.txt) and reads its
// options from this symbol. Its heap asks for huge pages (where the system allows them at
// all): on a VM a 4 KiB fault can be a trap to the hypervisor (harness/bench/page_faults.c),
// and the analysis touches tens of thousands of fresh pages. The cost is ~15 MiB more RSS
// (huge pages partly used) and, where memory is fragmented, a fault that waits for compaction.
extern "C" {
// NOLINTNEXTLINE: the name jemalloc looks up.
const char* malloc_conf = "thp:always,metadata_thp:auto";
}

#include "harness/cli/analysis_allocator.h"

#include <jemalloc/jemalloc.h>

namespace memstage::harness {

void return_freed_pages() {
  static_assert(MALLCTL_ARENAS_ALL == 4096, "the name below says every arena");
  mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
}

unsigned this_thread_arena() {
  unsigned arena = 0;
  size_t size = sizeof(arena);
  mallctl("thread.arena", &arena, &size, nullptr, 0);
  return arena;
}

void use_arena(unsigned arena) { mallctl("thread.arena", nullptr, nullptr, &arena, sizeof(arena)); }

}  // namespace memstage::harness
