// Every setting of the tracer, read once from the environment that `memstage run` sets.
#pragma once

#include <cstddef>
#include <cstdint>

#include "profiler/trace/trace_format.h"

namespace memstage::preload {

// The longest MEMSTAGE_OUTPUT: a trace file's path in it (".../trace.<pid>.<n>.mst") must
// stay under PATH_MAX (4096). `memstage run` refuses a longer folder.
inline constexpr size_t kMaxOutputDirBytes = 4000;

inline constexpr uint64_t kDefaultSampleRateBytes = 256 * 1024;

struct Options {
  // MEMSTAGE_OUTPUT: folder for trace.<pid>.mst files. Unset or longer than
  // kMaxOutputDirBytes: the tracer stays passive.
  char output_dir[kMaxOutputDirBytes + 1] = {};
  // MEMSTAGE_MODE: "full" (every event with its stack), "stats" (counters only),
  // "aggregate" (every event with its stack, folded in process: aggregate.h) or "sample"
  // (allocations sampled by bytes, exact heap counters).
  trace::Mode mode = trace::Mode::kFull;
  // MEMSTAGE_SAMPLE_RATE_BYTES: sample mode's mean spacing of samples in bytes allocated
  // (docs/sample-mode.md says how the default was chosen).
  uint64_t sample_rate_bytes = kDefaultSampleRateBytes;
  // MEMSTAGE_MAX_DEPTH: frames kept per stack.
  uint32_t max_depth = 64;
  // MEMSTAGE_SAMPLE_INTERVAL_MS: RSS sampling and flush tick.
  uint32_t sample_interval_ms = 10;
  // MEMSTAGE_SNAPSHOT_INTERVAL_MS: aggregate mode writes its figures this often.
  uint32_t snapshot_interval_ms = 1000;
  // MEMSTAGE_TIMELINE_TICKS: aggregate mode's timeline keeps every sampling tick for this
  // many ticks, then ticks every age / this (samplers.h, aged_tick_interval_ns); 0: never coarsens.
  uint32_t timeline_full_rate_ticks = 6000;
  // MEMSTAGE_FOLLOW_FORK: 1 (a forked child writes its own trace) or 0 (children untraced).
  bool follow_fork = true;
  // MEMSTAGE_RAM_LIMIT_BYTES: plays a machine with this much RAM (0: no limit). When RSS
  // passes it the tracer records the moment; with MEMSTAGE_RAM_LIMIT_ACTION=stop (the
  // default) it then writes what it has and stops the program, as the OOM killer would.
  uint64_t ram_limit_bytes = 0;
  bool ram_limit_stops = true;
};

// Reads the options; getenv only, no allocation. Unknown values keep the default.
Options read_options();

}  // namespace memstage::preload
