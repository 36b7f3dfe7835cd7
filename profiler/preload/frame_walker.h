// The call stack of the calling thread, walked with the modules' own unwind tables
// (.eh_frame through .eh_frame_hdr, found with _dl_find_object) and a per-thread cache
// of each return address's rule, in the few forms that cover compiled code: CFA = rsp or
// rbp plus a constant, the return address at CFA-8, rbp unchanged or saved at a constant
// offset from the CFA. Those are the frames libunwind's own fast path (unw_backtrace)
// handles, stepped the same way, so the two give the same return addresses; the walk
// costs a cache probe and one or two loads a frame instead of libunwind's ~7 ns. Anything
// else (no unwind table, a signal frame, an expression, a stack that does not grow
// upwards) ends the walk with kLeaveToLibunwind: the caller then asks unw_backtrace, so
// no stack is ever guessed.
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

// One return address's rule for stepping to its caller's frame.
struct FrameRule {
  uint64_t pc = 0;  // the address looked up (a return address less 1; 0: empty slot)
  int32_t cfa_offset = 0;
  int16_t rbp_offset = 0;  // rbp saved at CFA + this, when kRbpSaved
  uint8_t kind = 0;
  uint8_t flags = 0;
  static constexpr uint8_t kCfaRsp = 1;
  static constexpr uint8_t kCfaRbp = 2;
  static constexpr uint8_t kLastFrame = 3;  // the outermost frame: the walk ends here
  static constexpr uint8_t kUnsupported = 4;
  static constexpr uint8_t kRbpSaved = 1;
};
static_assert(sizeof(FrameRule) == 16);

// A thread's rules, direct-mapped by address. Emptied when modules are unloaded or
// loaded (their code, and so their rules, may be at addresses seen before).
struct FrameRuleCache {
  static constexpr uint32_t kSlots = 2048;  // 32 KiB
  uint64_t generation = 0;
  FrameRule slots[kSlots];
};

// Bumped on dlopen and dlclose: every thread's cache is emptied before its next walk.
extern std::atomic<uint64_t> g_frame_rule_generation;

constexpr int kLeaveToLibunwind = -1;

// Writes the return addresses of the frames above `start` (its caller's first), at most
// `max`, as unw_backtrace called at `start` would; returns how many, or kLeaveToLibunwind.
int walk_frames(FrameRuleCache& cache, WalkStart start, uint64_t* out, int max);

// The rule for `pc` read from the module's unwind table (uncached; for tests).
FrameRule frame_rule_for(uint64_t pc);

}  // namespace memstage::preload
