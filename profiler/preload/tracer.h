// State shared by the parts of the in-process tracer: the interposed functions
// (interpose*.cpp, got_hooks.cpp), the recording paths (tracer.cpp) and the writer
// thread (writer.cpp).
#pragma once

#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "profiler/preload/byte_sampler.h"
#include "profiler/preload/event_order.h"
#include "profiler/preload/event_ring.h"
#include "profiler/preload/frame_walker.h"
#include "profiler/preload/options.h"
#include "profiler/preload/real_functions.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/sampled_blocks.h"
#include "profiler/preload/stack_table.h"
#include "profiler/preload/tracer_memory.h"
#include "profiler/trace/trace_records.h"

namespace memstage::preload {

struct PythonStack;  // python_frames.cpp

// One per thread that allocates; mapped by the tracer, reused after the thread exits.
struct ThreadState {
  EventRing ring;
  LastStack last_stack;
  WalkCache walk_cache;
  // The stack the thread's last successful walk was interned as (capture_stack), or
  // kRootId: a walk that repeats it (WalkCache::repeated) is that stack again, and a loop
  // allocating from one place skips the intern's frame-by-frame comparison.
  uint32_t last_walk_stack = StackTable::kRootId;
  // Stats and sample modes' call counters: written by the owner thread only, summed by the
  // writer.
  std::atomic<uint64_t> allocations{0};
  std::atomic<uint64_t> frees{0};
  std::atomic<uint64_t> bytes_allocated{0};
  // Change of live bytes (usable sizes) not yet folded into Tracer::approx_live_bytes.
  int64_t unfolded_live_bytes = 0;
  // Sample mode: which allocations are recorded. Stats and sample modes: the heap counted
  // on every call, the change not yet added to Tracer::heap_live_bytes, and its highest
  // since then.
  ByteSampler sampler;
  int64_t heap_unfolded_bytes = 0;
  int64_t heap_unfolded_high_bytes = 0;
  // The thread that owns it (kernel thread id). Its key destructor marks it exiting: the
  // thread may still allocate on its way out (later TLS destructors, the C library), with
  // this same state. Once the thread is gone and the writer has drained the ring, the next
  // new thread takes the state over, so the tracer's memory follows the threads alive at
  // once, not all that ever ran.
  pid_t owner_tid = 0;
  std::atomic<bool> exiting{false};
  // Free to take without checking an owner (the other threads of a forked parent).
  std::atomic<bool> retired{false};
  // The Python frames this thread runs, once Python attached it (python_frames.h).
  PythonStack* python = nullptr;
};

// What this process records, in one byte that the malloc family's fast path reads: off, or
// on in a mode. The counting modes have values of their own, and of their own again where
// the allocator is glibc's (the usable size read from its size word), so that a call learns
// that it is counted, how, and how to read a block's size from one load.
enum class Recording : uint8_t {
  kOff = 0,      // before start, without MEMSTAGE_OUTPUT, after exit, in a child the fork handlers did not see
  kStats,        // stats mode: every call and the heap counted (alloc_counted<false>)
  kSample,       // sample mode: as stats mode, and some calls unwound (alloc_counted<true>)
  kTraced,       // full and aggregate modes: every call recorded under the re-entry guard
  kStatsGlibc,   // kStats with glibc's allocator
  kSampleGlibc,  // kSample with glibc's allocator
};

// Whether this process records, on a page of its own mapped MADV_WIPEONFORK: a child made
// without the fork handlers (a raw clone(2), as Chromium's zygote forks) finds it zeroed,
// so it records nothing and never waits for a writer thread that is not in it. A child
// that shares the memory (vfork) still sees the parent's page, with the parent's pid.
// The page is the library's own (zero, kOff, until start maps it anew), reached without a
// pointer to follow.
inline constexpr size_t kProcessMarkBytes = 4096;
struct alignas(kProcessMarkBytes) ProcessMark {
  std::atomic<Recording> recording{Recording::kOff};
  int pid = 0;
};
static_assert(sizeof(ProcessMark) == kProcessMarkBytes, "the mark is one page, mapped on its own");
// Hidden (as all of the library's own symbols): the fast path reads it at a fixed offset
// from its code, with no address to load first.
extern ProcessMark g_process_mark __attribute__((visibility("hidden")));

struct Tracer {
  static constexpr uint32_t kMaxThreads = 4096;
  Options options;
  // Set by the fork handlers for the child's: the child's mark is wiped.
  bool recording_at_fork = false;
  EventNumbers numbers;  // the events' order (event_order.h)
  StackTable stacks;

  ThreadState* threads[kMaxThreads] = {};
  std::atomic<uint32_t> thread_count{0};
  pthread_mutex_t threads_mutex = PTHREAD_MUTEX_INITIALIZER;

  // Stages: the process-wide stack of open stage name ids, and the interned names. A
  // begin past either limit is not recorded, and neither is its end: kDroppedStage marks
  // it in open_stages, and begins past kMaxStageDepth are only counted (open_past_depth).
  static constexpr uint32_t kMaxStageDepth = trace::kMaxStageDepth;
  static constexpr uint32_t kMaxStageNames = trace::kMaxStageNames;
  static constexpr uint32_t kDroppedStage = UINT32_MAX;
  // Name lookup: open addressing on the name's hash, slots hold id + 1 (0: empty); at
  // most half full, so a probe ends in a few steps.
  static constexpr uint32_t kStageNameSlots = 2 * kMaxStageNames;
  pthread_mutex_t stage_mutex = PTHREAD_MUTEX_INITIALIZER;
  uint32_t open_stages[kMaxStageDepth] = {};
  uint32_t open_stage_count = 0;
  uint32_t open_past_depth = 0;
  const char* stage_names[kMaxStageNames] = {};
  uint32_t stage_name_lengths[kMaxStageNames] = {};
  uint32_t stage_name_count = 0;
  uint32_t stage_name_slots[kStageNameSlots] = {};
  // Begins dropped, by trace::StageLimit.
  uint64_t stage_begins_dropped[2] = {};
  BumpArena stage_name_arena;

  // Approximate live heap (usable sizes) to sample RSS near new heap highs.
  std::atomic<int64_t> approx_live_bytes{0};
  std::atomic<int64_t> rss_sampled_at_live_bytes{0};
  // When RSS was last sampled (monotonic): a wait samples it when that is long enough ago.
  std::atomic<uint64_t> rss_sampled_at_ns{0};
  // The allocator's figures at heap highs: when last asked, and a high not asked about
  // yet (the writer's next tick asks).
  std::atomic<uint64_t> allocator_sampled_at_high_ns{0};
  std::atomic<bool> allocator_sample_pending{false};

  // Stats and sample modes: the live heap (usable sizes), exact but for what threads have
  // not added yet (at most trace::kHeapFoldBytes each), the highest since the last
  // kHeapCounters. Sample mode: the sampled blocks that may be live.
  std::atomic<int64_t> heap_live_bytes{0};
  std::atomic<int64_t> heap_high_bytes{0};
  SampledBlocks sampled_blocks;

  std::atomic<uint64_t> lost_events{0};
  std::atomic<bool> ram_limit_passed{false};
  uint64_t start_monotonic_ns = 0;
};

extern Tracer g_tracer __attribute__((visibility("hidden")));

// True once the tracer records; false before start, without MEMSTAGE_OUTPUT, after exit,
// and in a child the fork handlers did not see.
inline Recording recording_state() { return g_process_mark.recording.load(std::memory_order_relaxed); }
inline bool recording() { return recording_state() != Recording::kOff; }
// Starts recording (in the value of the mode of the options) or stops it.
void set_recording(bool on);
// Stops recording; true for the one caller that found it on.
bool stop_recording_once();

// True in a child that shares this process's memory but was made without the fork
// handlers (vfork, clone with CLONE_VM): every byte of tracer state it sees is its
// parent's, which is still running (its writer thread too). Such a child touches none of
// it; it execs or exits soon. A system call: only for exec, exit and fatal signals.
bool in_child_sharing_memory();

uint64_t monotonic_ns();
inline uint64_t trace_time_ns() { return monotonic_ns() - g_tracer.start_monotonic_ns; }

ThreadState* create_thread_state();

// The calling thread's state, created on first use; nullptr when none can be had.
inline ThreadState* current_thread_state() {
  ThreadState* ts = t_thread.state;
  return __builtin_expect(ts != nullptr, 1) ? ts : create_thread_state();
}

// Pushes `bytes` of ready trace records as one event. Thread-safe per ThreadState owner.
void push_encoded(ThreadState* ts, const uint8_t* bytes, uint32_t length);
// Encodes a record made of integers (trace_records.h) and pushes it.
template <class Record>
inline void push_record(ThreadState* ts, const Record& record) {
  uint8_t buf[trace::records::max_encoded_bytes<Record>()];
  push_encoded(ts, buf, static_cast<uint32_t>(trace::records::encode(buf, record) - buf));
}
// Pushes one RSS record and one allocator-statistics record (and counters in stats and
// sample modes), and the memory shares where due (`at_end`: the process's last samples).
void push_samples(ThreadState* ts, bool with_allocator_stats, bool at_end = false);
// Pushes the process's call counters (kCounters), summed over the threads.
void push_counters(ThreadState* ts);
// Encodes the module list (dl_iterate_phdr) as a kModules record into `out` (capacity
// bytes); returns the length, 0 if it did not fit.
uint32_t encode_modules(uint8_t* out, uint32_t capacity);

// While the program has one thread there is no writer thread (writer.h): the writer's
// rounds run on the program's thread, at serve points on its own path where it holds none
// of the allocator's locks (after an allocation, before a free, at stage edges, at heap
// highs), every kServeEvery events or calls (in sample mode, at its sampled allocations and
// where a round is due at its checkpoints instead: alloc_counted<true>), and before it
// blocks (before_wait). A no-op while the writer thread runs. Callable without the
// re-entry guard: it sets it, and keeps errno.
inline constexpr uint64_t kServeEvery = 4096;
// Sample mode without a writer thread: each thread looks at the clock every this many
// bytes it allocates, at the sampler's checkpoints, and serves if the writer's round is due.
inline constexpr int64_t kCheckpointBytes = 16 * 1024;
void serve_point();
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

inline bool stats_mode() { return g_tracer.options.mode == trace::Mode::kStats; }
inline bool sample_mode() { return g_tracer.options.mode == trace::Mode::kSample; }
// The modes that count every call and the heap at the malloc family (counted_alloc) and
// unwind none or few: by the options, and by the recording byte (one load).
inline bool counting_mode() { return stats_mode() || sample_mode(); }
inline bool recording_counted() {
  const Recording state = recording_state();
  return state == Recording::kStats || state == Recording::kSample || state == Recording::kStatsGlibc ||
         state == Recording::kSampleGlibc;
}

// Stats and sample modes: adds the thread's change of live heap to the process's, raising
// the high (callable without the re-entry guard: it sets it, and keeps errno).
void fold_heap_bytes(ThreadState* ts);
inline constexpr auto kHeapFoldBytes = static_cast<int64_t>(trace::kHeapFoldBytes);

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
inline void counted_alloc(ThreadState* ts, void* p, size_t size, bool from_realloc) {
  sample_mode() ? counted_alloc_as<true>(ts, p, size, from_realloc) : counted_alloc_as<false>(ts, p, size, from_realloc);
}
inline void counted_free(ThreadState* ts, void* p) {
  sample_mode() ? counted_free_as<true>(ts, p) : counted_free_as<false>(ts, p);
}

}  // namespace memstage::preload
