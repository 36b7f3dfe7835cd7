// The allocator of memstage's own process (not of the programs it traces: they are exec'd
// with their own). The analysis of a large trace makes millions of small blocks (stack
// tree nodes, per-site figures, the report's stacks) and touches hundreds of MiB once:
// with glibc's malloc most of its time went to page faults and malloc's bookkeeping (the
// trace of harness/bench/torch_small.py, `memstage report`: 9-12 s with glibc, 4-6 s with
// jemalloc on transparent huge pages, interleaved runs). jemalloc is linked in
// (harness/cli/CMakeLists.txt) and reads its options from this symbol; huge pages are
// used where the system allows them (transparent_hugepage "madvise" or "always").
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

}  // namespace memstage::harness
