// The recording paths' inline parts, for the interposed functions (interpose*.cpp,
// got_hooks.cpp): stats and sample modes' counting of every call, and the waits' and
// sleeps' hand-over to the writer. What they stand on is recording_core.h.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>

#include "profiler/preload/real_functions.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/recording_core.h"
#include "profiler/preload/sample_records.h"

namespace memstage::preload {

// The program is about to make a thread (pthread_create): the writer gets its own first.
void before_second_thread();
// The program is about to block (sleep, poll, waitpid, a read...) for `wait_ns`, or for a
// time unknown: what it recorded is written first (at most once a sampling interval, but
// before a long sleep always), so a kill while it waits loses nothing, and a sleep gets
// its samples (the heap it holds then) though no call comes; between rounds, RSS is
// sampled if the last sample is over kWaitRssGapNs old: what the program touched since
// its last call (pages it wrote, shared pages it read) counts while it waits.
// Returns when the wait began (monotonic), for after_wait; 0 for kNoWait, or when the
// writer thread runs.
inline constexpr uint64_t kUnknownWait = UINT64_MAX;
inline constexpr uint64_t kNoWait = 0;
inline constexpr uint64_t kWaitRssGapNs = 1'000'000;
uint64_t before_wait(uint64_t wait_ns);
// The wait that began at `started_ns` ended (keeps errno): if it lasted a sampling
// interval or more, the time is noted, as the writer thread's ticks would have: the heap
// stood still from before it to now.
void after_wait(uint64_t started_ns);
// A sleep of the program's until `deadline_ns` on `clock`, with no writer thread to tick
// while it sleeps: taken in slices of the sampling interval, the writer's round between
// them, as its thread would have done. Returns 0, or EINTR when a signal's handler ran
// (the caller says what is left).
int sleep_sliced(clockid_t clock, uint64_t deadline_ns);
// True when a sleep is to be sliced: recording, no writer thread.
bool sleeps_sliced();

// Stats and sample modes' whole cost for a call that records nothing, in two parts: the
// counting, inline (the counters, the heap count in usable sizes; in sample mode the
// sampler's countdown or the sampled-block filter), which says what else is due; then,
// rarely, the rest (counted_alloc_rest, sample_free_rest, out of line): the heap count
// folded into the process's, the sampled call recorded, a serve point. Stats mode is
// sample mode's counting without the sampler: one heap count, one rule (usable sizes).
// Run without the re-entry guard (interpose.cpp's fast path): what the rest calls sets it.
// Sample mode's serve points come on the sampler's compare (after each sampled allocation,
// and, while there is no writer thread, at its checkpoints, kCheckpointBytes, when the
// writer's round is due); stats mode's every kServeEvery allocations. What is due, as bits:
inline constexpr unsigned kFoldDue = 1;     // the thread's heap count moved kHeapFoldBytes: fold_heap_bytes
inline constexpr unsigned kSampledDue = 2;  // the sampler picked the allocation (settle it), or the freed block may be sampled
inline constexpr unsigned kServeDue = 4;    // stats mode: a serve point
// `usable_bytes`: the block's usable size (live_block_usable_size, or the same read inline).
// Returns the thread's allocations counted, this one included; sets `due` to kFoldDue or 0.
inline uint64_t heap_alloc_counted(ThreadState* ts, size_t size, size_t usable_bytes, unsigned& due) {
  const uint64_t allocations = ts->allocations.load(std::memory_order_relaxed) + 1;
  ts->allocations.store(allocations, std::memory_order_relaxed);
  ts->bytes_allocated.store(ts->bytes_allocated.load(std::memory_order_relaxed) + size, std::memory_order_relaxed);
  const int64_t unfolded = ts->heap_unfolded_bytes + static_cast<int64_t>(usable_bytes);
  ts->heap_unfolded_bytes = unfolded;
  // Without a branch: a growing heap raises the high on most allocations.
  ts->heap_unfolded_high_bytes = unfolded > ts->heap_unfolded_high_bytes ? unfolded : ts->heap_unfolded_high_bytes;
  // An allocation only raises the count: a fold of a count far below zero was due at the
  // free that took it there.
  due = unfolded >= kHeapFoldBytes ? kFoldDue : 0u;
  return allocations;
}
inline unsigned heap_free_counted(ThreadState* ts, size_t usable_bytes) {
  ts->frees.store(ts->frees.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // A free never raises the high.
  const int64_t unfolded = ts->heap_unfolded_bytes - static_cast<int64_t>(usable_bytes);
  ts->heap_unfolded_bytes = unfolded;
  return unfolded <= -kHeapFoldBytes ? kFoldDue : 0u;
}
// kSampling: sample mode's path, else stats mode's.
template <bool kSampling>
inline unsigned alloc_counted(ThreadState* ts, size_t size, size_t usable_bytes) {
  unsigned due;
  const uint64_t allocations = heap_alloc_counted(ts, size, usable_bytes, due);
  if constexpr (kSampling) return due | (ts->sampler.pick(size) ? kSampledDue : 0u);
  return due | (allocations % kServeEvery == 0 ? kServeDue : 0u);
}
template <bool kSampling>
inline unsigned free_counted(ThreadState* ts, void* p, size_t usable_bytes) {
  const unsigned due = heap_free_counted(ts, usable_bytes);
  if constexpr (!kSampling) return due;
  return due | (g_tracer.sampled_blocks.may_hold(reinterpret_cast<uint64_t>(p)) ? kSampledDue : 0u);
}
void sample_alloc_rest(ThreadState* ts, void* p, size_t size, bool from_realloc, unsigned due);
void sample_free_rest(ThreadState* ts, void* p, unsigned due);
void stats_alloc_rest(ThreadState* ts, unsigned due);
template <bool kSampling>
inline void alloc_rest(ThreadState* ts, void* p, size_t size, bool from_realloc, unsigned due) {
  if constexpr (kSampling) return sample_alloc_rest(ts, p, size, from_realloc, due);
  stats_alloc_rest(ts, due);
}
template <bool kSampling>
inline void free_rest(ThreadState* ts, void* p, unsigned due) {
  if constexpr (kSampling) return sample_free_rest(ts, p, due);
  fold_heap_bytes(ts);  // the only bit a stats-mode free raises
}

// The whole counted call, for the paths that are not the fast path (calloc, realloc, new,
// the general paths): by the mode of the options.
template <bool kSampling>
inline void counted_alloc_as(ThreadState* ts, void* p, size_t size, bool from_realloc) {
  if (const unsigned due = alloc_counted<kSampling>(ts, size, live_block_usable_size(p))) {
    alloc_rest<kSampling>(ts, p, size, from_realloc, due);
  }
}
template <bool kSampling>
inline void counted_free_as(ThreadState* ts, void* p) {
  if (const unsigned due = free_counted<kSampling>(ts, p, live_block_usable_size(p))) free_rest<kSampling>(ts, p, due);
}
// A forked child's own blocks (OwnBlocks) are kept on the general paths only, where these
// two are called; the parent's fast path never reads the table.
void note_own_block(void* p);
// False for a forked child's free of a block it inherited: left out (docs/jobs.md).
bool free_is_own(void* p);
inline void counted_alloc(ThreadState* ts, void* p, size_t size, bool from_realloc) {
  if (__builtin_expect(g_tracer.own_blocks.active(), 0)) note_own_block(p);
  sample_mode() ? counted_alloc_as<true>(ts, p, size, from_realloc) : counted_alloc_as<false>(ts, p, size, from_realloc);
}
inline bool counted_free(ThreadState* ts, void* p) {
  if (__builtin_expect(g_tracer.own_blocks.active(), 0) && !free_is_own(p)) return false;
  sample_mode() ? counted_free_as<true>(ts, p) : counted_free_as<false>(ts, p);
  return true;
}

}  // namespace memstage::preload
