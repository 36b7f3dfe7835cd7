// The tracer's stack walk (profiler/preload/frame_walker.h) against libunwind's
// unw_backtrace, which it stands in for: the same return addresses through plain frames,
// frames addressed from rbp (alloca, frame pointers), the C library's code (qsort calling
// back), deep recursion and threads; and what it cannot step is left to libunwind.
#include <catch2/catch.hpp>
#include <alloca.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <cstdint>
#include <thread>
#include <vector>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "profiler/preload/frame_walker.h"

using memstage::preload::FrameRule;
using memstage::preload::WalkCache;
using memstage::preload::g_frame_rule_generation;
using memstage::preload::kLeaveToLibunwind;
using memstage::preload::walk_frames;
using memstage::preload::walk_start_here;

namespace {

struct Walks {
  std::vector<uint64_t> walked;  // from walk_frames started in probe: probe's callers
  std::vector<uint64_t> libunwind;  // unw_backtrace in probe, less its first (in probe)
  int walked_count = 0;
  bool out_if_repeated = true;  // passed to walk_frames
  bool repeated = false;  // WalkCache::repeated after the walk
  bool out_written = false;  // whether the walk wrote to its output
};

// Each thread's own, as in the tracer (a ThreadState's).
thread_local WalkCache t_cache;

// The two walks from one function. The walk starts at this very point; unw_backtrace's
// first address is the call to it, also in this function, and is dropped.
__attribute__((noinline)) void probe(Walks& walks, int max = 300) {
  uint64_t walked[300];
  void* unwound[301];
  for (uint64_t& frame : walked) frame = 0;
  walks.walked_count = walk_frames(t_cache, walk_start_here(), walked, max, walks.out_if_repeated);
  walks.repeated = t_cache.repeated;
  walks.out_written = walked[0] != 0;
  const int n = unw_backtrace(unwound, max + 1);
  if (walks.walked_count > 0 && walks.out_written) walks.walked.assign(walked, walked + walks.walked_count);
  for (int i = 1; i < n; ++i) walks.libunwind.push_back(reinterpret_cast<uint64_t>(unwound[i]));
  asm volatile("" ::: "memory");  // keeps probe a frame of its own, not a tail call
}

volatile int g_sink = 0;

__attribute__((noinline)) void recurse(int depth, Walks& walks, int max = 300) {
  if (depth > 0) {
    recurse(depth - 1, walks, max);
  } else {
    probe(walks, max);
  }
  g_sink = g_sink + 1;  // not a tail call
}

// A frame whose size is known only at run time: its CFA is addressed from rbp.
__attribute__((noinline)) void with_alloca(int bytes, Walks& walks) {
  auto* buffer = static_cast<volatile char*>(alloca(static_cast<size_t>(bytes)));
  buffer[0] = 1;
  recurse(3, walks);
  g_sink = g_sink + buffer[0];
}

#if defined(__clang__)
__attribute__((noinline)) void with_frame_pointer(Walks& walks) {  // clang: as the build has it
#else
__attribute__((noinline, optimize("no-omit-frame-pointer"))) void with_frame_pointer(Walks& walks) {
#endif
  with_alloca(100, walks);
  g_sink = g_sink + 1;
}

Walks* g_walks_from_qsort = nullptr;
int compare_and_probe(const void* a, const void* b) {
  if (g_walks_from_qsort) {
    recurse(2, *g_walks_from_qsort);
    g_walks_from_qsort = nullptr;
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

// Two callers of one function at the same depth: every frame inside `middle` starts where
// it started when called through the other, only the return address into them differs.
__attribute__((noinline)) void middle(Walks& walks, int depth) {
  recurse(depth, walks);
  g_sink = g_sink + 1;
}
__attribute__((noinline)) void outer_a(Walks& walks, int depth) {
  middle(walks, depth);
  g_sink = g_sink + 1;
}
__attribute__((noinline)) void outer_b(Walks& walks, int depth) {
  middle(walks, depth);
  g_sink = g_sink + 2;
}

void check_same(const Walks& walks) {
  REQUIRE(walks.walked_count != kLeaveToLibunwind);
  CHECK(walks.walked.size() >= 3);
  CHECK(walks.walked == walks.libunwind);
}

}  // namespace

TEST_CASE("the stack walk gives the return addresses unw_backtrace gives") {
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  SECTION("plain frames, shallow and deep") {
    for (int depth : {0, 1, 5, 40, 200}) {
      Walks walks;
      recurse(depth, walks);
      check_same(walks);
    }
  }
  SECTION("frames addressed from rbp (alloca, frame pointers)") {
    for (int bytes : {16, 1000, 5000}) {
      Walks walks;
      with_alloca(bytes, walks);
      check_same(walks);
    }
    Walks walks;
    with_frame_pointer(walks);
    check_same(walks);
  }
  SECTION("through the C library's code (qsort calling back)") {
    Walks walks;
    g_walks_from_qsort = &walks;
    int values[64];
    for (int i = 0; i < 64; ++i) values[i] = (i * 37) % 64;
    qsort(values, 64, sizeof(int), compare_and_probe);
    check_same(walks);
  }
  SECTION("the same stack twice: the second walk from the cached rules") {
    Walks first, second;
    recurse(10, first);
    recurse(10, second);
    check_same(first);
    check_same(second);
  }
  SECTION("threads, whose stacks end in the C library's thread start") {
    std::vector<Walks> walks(8);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back([&walks, i] { recurse(i * 3, walks[i]); });
    for (auto& t : threads) t.join();
    for (const Walks& w : walks) check_same(w);
  }
}

TEST_CASE("the stack walk stops at its maximum") {
  Walks all, three, all_again;
  recurse(20, all);
  recurse(20, three, 3);  // after a whole walk of the same frames
  recurse(20, all_again);  // after a walk cut short: the rest is walked, not taken from it
  REQUIRE(all.walked_count > 20);
  REQUIRE(three.walked_count == 3);
  const std::vector<uint64_t> innermost(all.walked.begin(), all.walked.begin() + 3);
  CHECK(three.walked == innermost);
  CHECK(three.libunwind == innermost);
  check_same(all_again);
}

TEST_CASE("rbp is compared only where a frame is found from it") {
  // Optimized code keeps data in rbp: a walk whose frames are all found from rsp repeats
  // the last one whatever rbp holds at its start. Walked twice from one place, the second
  // time with rbp changed.
  uint64_t first[64], second[64];
  const auto here = walk_start_here();
  const int first_n = walk_frames(t_cache, here, first, 64);
  const int second_n = walk_frames(t_cache, {here.pc, here.rsp, here.rbp ^ 0x40}, second, 64);
  const bool repeated = t_cache.repeated;
  REQUIRE(first_n > 0);
  bool any_from_rbp = false;
  for (uint32_t i = 0; i < t_cache.last_count; ++i) any_from_rbp |= t_cache.last[i].cfa_from_rbp;
  if (any_from_rbp) {
    WARN("a frame on the test's path is found from rbp: nothing to show");  // a build with frame pointers
  } else {
    CHECK(repeated);
    CHECK(std::vector<uint64_t>(first, first + first_n) == std::vector<uint64_t>(second, second + second_n));
  }
}

TEST_CASE("the last walk's outer frames are taken only where every word it read still holds") {
  // Walks that start where the last one started but return through another caller,
  // alternated on one thread, then on eight threads at once with different depths.
  for (int round = 0; round < 4; ++round) {
    Walks a, b;
    outer_a(a, 6);
    outer_b(b, 6);
    check_same(a);
    check_same(b);
    CHECK(a.walked != b.walked);
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &mismatches] {
      for (int i = 0; i < 200; ++i) {
        Walks walks;
        const int depth = (t + i) % 3 * 4;
        if ((i / 2 + t) % 2) {
          outer_a(walks, depth);
        } else {
          outer_b(walks, depth);
        }
        if (walks.walked_count == kLeaveToLibunwind || walks.walked != walks.libunwind) ++mismatches[t];
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(mismatches == std::vector<int>(8, 0));
}

TEST_CASE("code without unwind tables is left to libunwind") {
  // Anonymous executable memory, as a JIT's: no module holds it, so no table describes it.
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  WalkCache cache{};  // value-initialised: its rules empty
  uint64_t out[8];
  const auto pc = reinterpret_cast<uint64_t>(page) + 16;
  const auto here = walk_start_here();
  CHECK(memstage::preload::frame_rule_for(pc).kind == FrameRule::kUnsupported);
  CHECK(walk_frames(cache, {pc, here.rsp, here.rbp}, out, 8) == kLeaveToLibunwind);
  munmap(page, 4096);
}

TEST_CASE("the cached rules are read again once modules change") {
  WalkCache cache{};  // value-initialised: its rules empty
  uint64_t out[64];
  REQUIRE(walk_frames(cache, walk_start_here(), out, 64) > 0);
  const uint64_t before = cache.generation;
  g_frame_rule_generation.fetch_add(1);
  uint64_t again[64];
  const int n = walk_frames(cache, walk_start_here(), again, 64);
  CHECK(n > 0);
  CHECK(cache.generation == before + 1);
}

namespace {

struct Step {
  void (*from)(Walks&, int);  // nullptr: recurse
  int depth;
  int max;
  bool out_if_repeated;
};

// Each step walked from one call site, with one Walks (its address, which the frames may
// hold in registers they save, the same each time), its results copied out after each.
// With a frame pointer, here and in run_step: these frames are found from rbp, so a walk
// compares rbp and the rbp saved below them, and rbp is each one's base, the same at every
// step whatever the loop keeps in registers.
#if defined(__clang__)
#define MEMSTAGE_WITH_FRAME_POINTER __attribute__((noinline))
#else
#define MEMSTAGE_WITH_FRAME_POINTER __attribute__((noinline, optimize("no-omit-frame-pointer")))
#endif
MEMSTAGE_WITH_FRAME_POINTER void run_step(const Step& step, Walks& walks) {
  if (step.from) {
    step.from(walks, step.depth);
  } else {
    recurse(step.depth, walks, step.max);
  }
  g_sink = g_sink + 1;
}
MEMSTAGE_WITH_FRAME_POINTER std::vector<Walks> run_steps(const std::vector<Step>& steps) {
  std::vector<Walks> results;
  results.reserve(steps.size());
  Walks walks;
  for (const Step& step : steps) {
    walks = Walks{};
    walks.out_if_repeated = step.out_if_repeated;
    run_step(step, walks);
    results.push_back(walks);
  }
  return results;
}

}  // namespace

TEST_CASE("a walk says when it repeats the last one's frames, and only then") {
  const std::vector<Step> steps = {
      {outer_a, 6, 300, true},   // 0: the rules read from the unwind tables
      {outer_a, 6, 300, true},   // 1: repeats 0
      {outer_a, 6, 300, true},   // 2: repeats 1
      {outer_b, 6, 300, true},   // 3: the same depth, another return address
      {outer_b, 6, 300, true},   // 4: repeats 3
      {outer_b, 4, 300, true},   // 5: starts above the last walk's first step
      {outer_b, 8, 300, true},   // 6: starts below it
      {nullptr, 20, 300, true},  // 7
      {nullptr, 20, 300, true},  // 8: repeats 7
      {nullptr, 20, 3, true},    // 9: fewer frames than the last walk returned
      {nullptr, 20, 300, true},  // 10: more
      {outer_a, 6, 300, true},   // 11
      {outer_a, 6, 300, false},  // 12: repeats 11, asked not to write its frames
      {outer_b, 6, 300, false},  // 13: does not repeat: written all the same
  };
  const std::vector<Walks> results = run_steps(steps);
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("walk " << i);
    const bool repeats = i == 1 || i == 2 || i == 4 || i == 8 || i == 12;
    CHECK(results[i].repeated == repeats);
    if (i == 12) {
      CHECK_FALSE(results[i].out_written);  // its number only
      CHECK(results[i].walked_count == results[11].walked_count);
    } else if (i != 9) {
      check_same(results[i]);
    }
  }
  CHECK(results[2].walked == results[1].walked);
  CHECK(results[3].walked != results[2].walked);
  CHECK(results[9].walked_count == 3);

  // Once modules change, nothing is taken for the same.
  g_frame_rule_generation.fetch_add(1);
  const Walks after_change = run_steps({{outer_a, 6, 300, true}})[0];
  CHECK_FALSE(after_change.repeated);
  check_same(after_change);
}
