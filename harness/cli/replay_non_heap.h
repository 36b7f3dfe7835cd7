// What `memstage replay` holds beside the replayed heap so that its peak RSS compares with
// the program's: the program's peak RSS less the replayer's, both in a full-mode run under
// glibc, the tracer's own memory taken off each (docs/compare.md, "Memory outside the heap").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace memstage::harness {

struct NonHeapHold {
  std::optional<uint64_t> hold_bytes;  // what the replayer maps and touches; nullopt: nothing held
  std::string note;                    // said in compare.json's notes, with the figures
};

// `run`: the run's folder of one process (a trace given alone, or a job: nothing held).
// Replays `ops` once under glibc in full mode into `calibration_dir`, holding nothing, for the
// replayer's peak measured as the program's was.
NonHeapHold non_heap_hold(const std::string& run, const std::string& memstage, const std::string& replayer,
                          const std::string& ops, const std::string& calibration_dir);

}  // namespace memstage::harness
