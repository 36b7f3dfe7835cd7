// What `memstage compare` runs, and in which order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/compare/allocator_tuning.h"

namespace memstage::compare {

// An allocator to preload after the tracer. `library` empty: glibc's malloc (nothing
// preloaded); nullopt allocator on a subject: leave the caller's LD_PRELOAD alone.
struct AllocatorChoice {
  std::string name;     // glibc, jemalloc, tcmalloc, mimalloc, or the file name of a .so
  std::string library;  // path of the .so to preload; empty for glibc
  Environment environment;  // a tuning's settings (--tune), set for its runs only
};

// A tuning as one more allocator to compare: its allocator resolved, its name and settings kept.
AllocatorChoice tuned_allocator(const Tuning& tuning, const std::vector<std::string>& library_dirs = {});

// Debian's allocator packages by name (libjemalloc2, libtcmalloc-minimal4, libmimalloc2.0),
// or a path to any allocator .so. Looks in `library_dirs` (the multiarch folders when
// empty). Throws std::invalid_argument naming what it looked for when not found.
AllocatorChoice resolve_allocator(const std::string& name_or_path,
                                  const std::vector<std::string>& library_dirs = {});

// One thing compared: a command under an allocator.
struct Subject {
  std::string name;  // unique; used in tables and as the folder name of its runs
  std::vector<std::string> command;
  std::optional<AllocatorChoice> allocator;
};

// "name=CMD ARGS" → name and the split command. Throws std::invalid_argument.
std::pair<std::string, std::vector<std::string>> parse_variant(const std::string& spec);

struct Variant {
  std::string name;
  std::vector<std::string> command;
};

// Every variant under every allocator. Names: the variant's, the allocator's, or
// "variant+allocator" when both vary. No variants: `command` as the one variant "default".
std::vector<Subject> make_subjects(const std::vector<Variant>& variants, const std::vector<std::string>& command,
                                   const std::vector<AllocatorChoice>& allocators);

enum class RunMode { kFull, kStats };
const char* mode_name(RunMode mode);

struct PlannedRun {
  size_t subject = 0;  // index into the subjects
  RunMode mode = RunMode::kStats;
  unsigned repeat = 0;   // 0-based among this subject's runs of this mode
  std::string dir_name;  // folder of this run under the compare output, e.g. "jemalloc/stats-2"
};

// One full-mode run per subject (memory figures), then `repeat` rounds of stats-mode runs
// (time). Every round visits every subject once, in order: round-robin, so that a drift of
// the machine (thermal throttling, a backup starting) spreads over all subjects instead of
// landing on whichever ran last.
std::vector<PlannedRun> plan_runs(const std::vector<Subject>& subjects, unsigned repeat);

// A name safe as one path component: [A-Za-z0-9._-], others become '_'.
std::string folder_name(const std::string& name);

}  // namespace memstage::compare
