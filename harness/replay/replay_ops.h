// A full-mode trace's allocation sequence as the replayer (replayer.cpp) runs it: one op per
// malloc, free and realloc of the traced process, each block in a numbered slot, and the
// stage edges between them (memstage replay, docs/compare.md). The trace names blocks by
// allocation info (size, stack, stage), not by address: a free takes the block of that info
// allocated last (the order a program's stack-like lifetimes mostly have).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memstage::replay {

inline constexpr char kOpsMagic[8] = {'M', 'S', 'R', 'E', 'P', 'L', 'A', 'Y'};
inline constexpr uint32_t kOpsVersion = 1;

enum class OpKind : uint32_t {
  kMalloc = 1,      // slot <- malloc(value), its pages touched
  kFree = 2,        // free(slot)
  kRealloc = 3,     // slot <- realloc(slot, value), the pages it grew by touched
  kStageBegin = 4,  // the stage named value (an index into the names)
  kStageEnd = 5,
};

// 16 bytes an op: the file is mapped and run through as it is.
struct Op {
  OpKind kind;
  uint32_t slot;
  uint64_t value;
};
static_assert(sizeof(Op) == 16);

// The file: this header, `ops` ops, then the stage names (each a u32 length and its bytes)
// to the end of the file.
struct OpsHeader {
  char magic[8];
  uint32_t version;
  uint32_t slots;  // the most blocks live at once
  uint64_t ops;
};
static_assert(sizeof(OpsHeader) == 24);

// What the conversion found, for the user.
struct ConversionSummary {
  uint64_t allocations = 0, frees = 0, reallocs = 0;
  uint64_t unmatched_frees = 0;  // of an info with no live block (a damaged trace)
  uint32_t slots = 0;            // the most blocks live at once
  std::vector<std::string> warnings;
};

// Writes `trace_path`'s sequence to `ops_path`. Throws std::runtime_error with one line for a
// trace that is not a full-mode one (the other modes do not hold the sequence), that cannot be
// read, or that is damaged (its lost chunks' allocations and frees would shift every later one).
ConversionSummary write_replay_ops(const std::string& trace_path, const std::string& ops_path);

}  // namespace memstage::replay
