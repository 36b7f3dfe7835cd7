// The call stack of the calling thread, walked with the modules' own unwind tables
// (.eh_frame through .eh_frame_hdr, found with _dl_find_object) and a per-thread cache
// of each return address's rule, in the few forms that cover compiled code: CFA = rsp or
// rbp plus a constant, the return address at CFA-8, rbp unchanged or saved at a constant
// offset from the CFA. Those are the frames libunwind's own fast path (unw_backtrace)
// handles, stepped the same way, so the two give the same return addresses; the walk
// costs a cache probe and one or two loads a frame, without libunwind's set-up. Anything
// else (no unwind table, a signal frame, an expression, a stack that does not grow
// upwards) ends the walk with kLeaveToLibunwind: the caller then asks unw_backtrace, so
// no stack is ever guessed.
//
// The outer frames are mostly the last walk's again (a loop allocating from one place, a
// program under the same main and the same framework). A step is a function of its start
// (the address whose rule applies, rsp, rbp) and of the words it reads (the return
// address, a saved rbp): once a step starts where a step of the thread's last walk
// started, and every word the last walk read from there on still holds what it read, the
// rest of the walk is the last walk's, frame for frame; the words are compared, not a
// hash, so this is exact. It costs a load and a compare a frame instead of a rule lookup.
// rbp counts only where the walk uses it: optimized code keeps data in rbp (a loop's
// counter, a pointer) and saves it in the frames of the functions it calls, and such a
// value, new at every call, leads no step unless a frame further out finds its CFA from
// rbp before another saved rbp replaces it. A step that differs further out than where
// the walk found the last one's again leaves the steps beyond it to be found again.
#pragma once

#include <atomic>
#include <cstdint>

namespace memstage::preload {

// Where a walk starts: the instruction at `pc`, with these stack and frame pointers.
struct WalkStart {
  uint64_t pc;
  uint64_t rsp;
  uint64_t rbp;
};

// The walk's start in the calling function, right after this point.
__attribute__((always_inline)) inline WalkStart walk_start_here() {
  WalkStart s;
  asm volatile(
      "lea 0f(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2\n"
      "0:"
      : "=r"(s.pc), "=r"(s.rsp), "=r"(s.rbp));
  return s;
}

// One return address's rule for stepping to its caller's frame. All zero (FrameRule{}):
// an empty slot. No member initializers: a WalkCache's 128 KiB of them are left as the
// zeroed pages they come in (WalkCache), not written when it is made.
struct FrameRule {
  uint64_t pc;  // the address looked up (a return address less 1; 0: empty slot)
  int32_t cfa_offset;
  int16_t rbp_offset;  // rbp saved at CFA + this, when kRbpSaved
  uint8_t kind;
  uint8_t flags;
  static constexpr uint8_t kCfaRsp = 1;
  static constexpr uint8_t kCfaRbp = 2;
  static constexpr uint8_t kLastFrame = 3;  // the outermost frame: the walk ends here
  static constexpr uint8_t kUnsupported = 4;
  static constexpr uint8_t kRbpSaved = 1;
};
static_assert(sizeof(FrameRule) == 16);

// One step of a walk: where it started and what it read.
struct WalkStep {
  uint64_t pc;   // the address whose rule applied
  uint64_t rsp;
  uint64_t rbp;
  uint64_t cfa;
  uint64_t return_address;  // read at cfa - 8
  uint64_t saved_rbp;       // read at cfa + rbp_offset, when rbp_saved
  int16_t rbp_offset;
  bool rbp_saved;
  bool cfa_from_rbp;
  // Whether this step's rbp, and the rbp it read (when rbp_saved), lead this step or one
  // further out: what a later walk must find the same (set when the walk is kept).
  bool rbp_used;
  bool saved_rbp_used;
};

// A thread's rules, direct-mapped by address, and its last walk. Emptied when modules
// are unloaded or loaded (their code, and so their rules, may be at addresses seen before).
// The rules start empty only in zeroed memory: a ThreadState's mapped pages (touched one
// slot at a time as walks fill them, never in stats mode), a static, or a value-initialised
// WalkCache{}.
struct WalkCache {
  // 128 KiB: harness/bench/torch_small.py's 1.1 M walks read a rule from the unwind
  // tables ~330 k times with 2,048 slots, ~120 k times with 8,192.
  static constexpr uint32_t kRuleSlots = 8192;
  static constexpr uint32_t kMaxSteps = 512;    // the most frames a walk may ask for
  FrameRule rules[kRuleSlots];
  WalkStep last[kMaxSteps];   // the last walk's steps, outermost first
  WalkStep fresh[kMaxSteps];  // the running walk's, innermost first
  uint32_t last_count = 0;
  bool last_complete = false;  // it ended at the outermost frame, not at its maximum
  bool last_ends_without_frame = false;  // its outermost step read no return address (< 0x4000)
  // Whether the latest walk returned the frames of the successful walk before it, every
  // one, in the same number (its caller may then reuse what it made of them), and how
  // many frames that one returned (-1: none).
  bool repeated = false;
  int last_output_count = -1;
  uint64_t generation = 0;
};

// Bumped on dlopen and dlclose: every thread's cache is emptied before its next walk.
extern std::atomic<uint64_t> g_frame_rule_generation;

constexpr int kLeaveToLibunwind = -1;

// Writes the return addresses of the frames above `start` (its caller's first), at most
// `max`, as unw_backtrace called at `start` would; returns how many, or kLeaveToLibunwind.
// `max` is at most WalkCache::kMaxSteps. The start comes in three registers: passed as a
// struct (24 bytes, on the stack) it was copied 16 bytes at a time from the two 8-byte
// stores that made it, a load no store can forward to. `out_if_repeated` false: a walk
// that repeats the last one (WalkCache::repeated) writes nothing to `out`, for a caller
// that kept what it made of those frames.
int walk_frames(WalkCache& cache, uint64_t start_pc, uint64_t start_rsp, uint64_t start_rbp, uint64_t* out, int max,
                bool out_if_repeated = true);
inline int walk_frames(WalkCache& cache, WalkStart start, uint64_t* out, int max, bool out_if_repeated = true) {
  return walk_frames(cache, start.pc, start.rsp, start.rbp, out, max, out_if_repeated);
}

// The rule for `pc`, read from its module's unwind table (what the cache keeps).
FrameRule frame_rule_for(uint64_t pc);

}  // namespace memstage::preload
