// A full-mode trace's allocation sequence as the replayer (replayer.cpp) runs it: one op per
// allocation, free and realloc of the traced process, with the call that made it (malloc,
// calloc, the memalign family, operator new, ...) and its alignment, each block in a
// numbered slot, and the stage edges between them (memstage replay, docs/compare.md). The
// trace names blocks by allocation info (size, stack, stage, call), not by address: a free
// takes the block of that info allocated last (the order a program's stack-like lifetimes
// mostly have).
//
// One stream of ops per recorded thread (kThread; a trace before version 6 is one thread),
// each run by a replay thread of its own. Where the order across threads matters a stream
// holds a kWait for another's progress: a block freed or reallocated by another thread than
// the one that made it waits for its allocation, a stage edge waits for every thread's ops
// before it, and every thread's next op waits for the stage edge. A freed slot is taken
// again only by the thread that freed it, so that the reuse of a slot never waits. And no
// thread runs ahead of the trace's order by much: every kEpochEvents allocation events
// the streams' lengths are marked, and each thread's ops after a mark wait for every
// other's before it. What a program's threads hold back one another by (a bounded queue
// whose producer waits for its consumer, a lock) is not in the trace; without the marks a
// producer's replay would allocate all its blocks before its consumer freed any.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memstage::replay {

inline constexpr char kOpsMagic[8] = {'M', 'S', 'R', 'E', 'P', 'L', 'A', 'Y'};
inline constexpr uint32_t kOpsVersion = 2;
// How far apart the marks of the trace's order are (above): a thread's ops run at most about
// two of these ahead of another's. Larger lets threads wait less, smaller keeps the heap
// closer to the program's at each instant.
inline constexpr uint64_t kEpochEvents = 64;

enum class OpKind : uint8_t {
  kMalloc = 1,      // slot <- the call's allocation of value bytes, its pages touched (not calloc's)
  kFree = 2,        // slot freed as its call's blocks are (free, operator delete)
  kRealloc = 3,     // slot <- realloc(slot, value), the whole block touched
  kStageBegin = 4,  // the stage named value (an index into the names)
  kStageEnd = 5,
  kWait = 6,  // until the thread numbered slot has run value ops of its stream
};

// 16 bytes an op: the file is mapped and run through as it is.
struct Op {
  OpKind kind;
  uint8_t call;        // trace::AllocCall of the block's allocation (kMalloc, kFree)
  uint8_t align_log2;  // log2 of the alignment it asked (0: none)
  uint8_t unused;
  uint32_t slot;
  uint64_t value;
};
static_assert(sizeof(Op) == 16);

// The file: this header; `threads` u64 counts of ops, one per thread's stream; the streams
// one after the other (`ops` ops in all); then the stage names (each a u32 length and its
// bytes) to the end of the file.
struct OpsHeader {
  char magic[8];
  uint32_t version;
  uint32_t slots;  // the slots the ops name: below this
  uint64_t ops;
  uint32_t threads;
  uint32_t unused;
};
static_assert(sizeof(OpsHeader) == 32);

// What the conversion found, for the user.
struct ConversionSummary {
  uint64_t allocations = 0, frees = 0, reallocs = 0;
  uint64_t unmatched_frees = 0;  // of an info with no live block (a damaged trace)
  uint64_t cross_thread_waits = 0;  // kWait ops: where one thread's op waits for another's
  uint32_t slots = 0;
  uint32_t threads = 0;  // the replay threads: the recorded threads that allocated or freed
  std::vector<std::string> warnings;
};

// Writes `trace_path`'s sequence to `ops_path`. Throws std::runtime_error with one line for a
// trace that is not a full-mode one (the other modes do not hold the sequence), that cannot be
// read, or that is damaged (its lost chunks' allocations and frees would shift every later one).
ConversionSummary write_replay_ops(const std::string& trace_path, const std::string& ops_path);

}  // namespace memstage::replay
