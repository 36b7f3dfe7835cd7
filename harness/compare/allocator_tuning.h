// An allocator's settings as one more subject of a comparison (`--tune ALLOCATOR:NAME=VALUE,…`
// of memstage compare and memstage replay, docs/compare.md): each allocator's own knobs, read
// from the environment at its start, so the program (or the replayer) runs unchanged.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace memstage::compare {

using Environment = std::vector<std::pair<std::string, std::string>>;

struct Tuning {
  std::string allocator;  // glibc, jemalloc, tcmalloc or mimalloc
  std::string name;       // "ALLOCATOR:NAME=VALUE,…" as given: the subject's name
  Environment settings;   // NAME, VALUE as given
  Environment environment;  // what the allocator reads: MALLOC_*, GLIBC_TUNABLES, MALLOC_CONF, TCMALLOC_*, MIMALLOC_*
};

// "glibc:MALLOC_ARENA_MAX=2,M_TRIM_THRESHOLD_=131072", "jemalloc:dirty_decay_ms=0,narenas=2"
// (→ MALLOC_CONF=dirty_decay_ms:0,narenas:2), "tcmalloc:release_rate=10" or
// "tcmalloc:TCMALLOC_RELEASE_RATE=10", "mimalloc:reset_delay=0" (→ MIMALLOC_RESET_DELAY).
// glibc takes its environment names (MALLOC_ARENA_MAX, MALLOC_TRIM_THRESHOLD_, …), mallopt's
// (M_TRIM_THRESHOLD_ → MALLOC_TRIM_THRESHOLD_) or tunables (glibc.malloc.* → GLIBC_TUNABLES).
// Throws std::invalid_argument with one line for an unknown allocator, a setting without
// '=' or value, or a name the allocator would silently ignore.
Tuning parse_tuning(const std::string& spec);

// The small grid `--suggest` sweeps for an allocator (glibc, jemalloc, tcmalloc, mimalloc;
// none for a .so given by path), as specs parse_tuning takes; the untuned allocator is the
// comparison's own subject. docs/compare.md lists it and why.
std::vector<std::string> suggestion_grid(const std::string& allocator);

}  // namespace memstage::compare
