// The recording core: what every part of the in-process tracer stands on. The
// process's recording state, the per-thread states and their event rings, and the one
// way events get into them (push_event, push_encoded). The writer (writer.cpp) drains
// the rings; the recording paths (record_paths.cpp, stage_records.cpp, sample_records.cpp)
// and python_frames.cpp fill them. The core calls none of them: the one round it hands
// upward (serve_point) goes through a function registered at start, and the writer
// thread's flags it reads are its own.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "profiler/preload/byte_sampler.h"
#include "profiler/preload/event_order.h"
#include "profiler/preload/event_ring.h"
#include "profiler/preload/frame_walker.h"
#include "profiler/preload/options.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/own_blocks.h"
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
  // kStats or kSample in a forked child: it tells its own blocks from those it inherited
  // (OwnBlocks), which the parent's fast path does not look up (malloc_counted_child).
  kCountedChild,
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
  static_assert(kMaxThreads <= trace::kMaxTraceThreads, "kThread numbers a ring");
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
  // The highest RSS written so far: once the timeline coarsens, a wait writes RSS only
  // above it, so that the run's peak RSS stays exact however few the ticks.
  std::atomic<uint64_t> rss_high_written_bytes{0};
  SampledBlocks sampled_blocks;
  // Stats and sample modes, in a forked child only: the blocks it allocated itself.
  OwnBlocks own_blocks;

  std::atomic<uint64_t> lost_events{0};
  std::atomic<bool> ram_limit_passed{false};
  uint64_t start_monotonic_ns = 0;

  // The writer thread as the recording threads see it (writer.cpp sets these): whether it
  // runs, the futex word that wakes it, and when its next round (a sampling tick) is due
  // (monotonic); the core reads them without calling up into the writer.
  std::atomic<bool> writer_thread_running{false};
  std::atomic<uint32_t> writer_wake_word{0};
  std::atomic<uint64_t> writer_next_round_ns{0};
  // The writer's drains begun and done, the threads waiting for one to end, and the drains
  // done when a wait last ran out (wait_for_writer_drain).
  std::atomic<uint32_t> writer_drains_begun{0};
  std::atomic<uint32_t> writer_drains_done{0};
  std::atomic<uint32_t> writer_drain_waiters{0};
  std::atomic<uint32_t> writer_drains_done_at_timeout{~0u};
  std::atomic<const ThreadState*> writer_thread_state{nullptr};  // its rounds' own highs never wait
};

extern Tracer g_tracer __attribute__((visibility("hidden")));

// True once the tracer records; false before start, without MEMSTAGE_OUTPUT, after exit,
// and in a child the fork handlers did not see.
inline Recording recording_state() { return g_process_mark.recording.load(std::memory_order_relaxed); }
inline bool recording() { return recording_state() != Recording::kOff; }
// Starts recording (in the value of the mode of the options and, in a forked child of the
// counting modes, of its own blocks' table) or stops it.
void set_recording(bool on);
// Stops recording; true for the one caller that found it on.
bool stop_recording_once();

// True in a child that shares this process's memory but was made without the fork
// handlers (vfork, clone with CLONE_VM): every byte of tracer state it sees is its
// parent's, which is still running (its writer thread too). Such a child touches none of
// it; it execs or exits soon. A system call: only for exec, exit and fatal signals.
bool in_child_sharing_memory();

uint64_t monotonic_ns();
pid_t current_tid();  // the kernel's thread id
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

inline bool stats_mode() { return g_tracer.options.mode == trace::Mode::kStats; }
inline bool sample_mode() { return g_tracer.options.mode == trace::Mode::kSample; }
// The modes that count every call and the heap at the malloc family (counted_alloc) and
// unwind none or few: by the options, and by the recording byte (one load).
inline bool counting_mode() { return stats_mode() || sample_mode(); }
inline bool recording_counted() {
  const Recording state = recording_state();
  return state == Recording::kStats || state == Recording::kSample || state == Recording::kStatsGlibc ||
         state == Recording::kSampleGlibc || state == Recording::kCountedChild;
}

inline bool writer_thread_running() { return g_tracer.writer_thread_running.load(std::memory_order_acquire); }
// True when the writer's next round (a tick) is due.
inline bool writer_round_due(uint64_t now_ns) {
  return now_ns >= g_tracer.writer_next_round_ns.load(std::memory_order_relaxed);
}
// Wakes the writer thread early (a ring is filling, RAM passed the limit). Once: the
// writer clears the word when it wakes, and until then a wake is pending (the producers of
// full rings each ask, many times a drain when many threads allocate).
void wake_writer();
// Wakes the writer thread and waits until a drain begun after this call has ended: the
// events this thread published are then in the pending file, which a SIGKILL leaves
// (pending_buffers.h). A drain never waits on the disk (writer.cpp, writer_round). At most
// kWriterDrainWaitNs: a writer held up longer (a fork, a stop, a starved CPU) holds the
// program up no longer, and only once, until its next drain ends.
inline constexpr uint64_t kWriterDrainWaitNs = 100'000'000;
void wait_for_writer_drain();

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
// The writer's round on the calling thread, which serve_point hands up to: registered once
// at start (tracer.cpp), a plain function pointer so that the core needs nothing above it.
void set_serve_round(void (*round)());

// The per-thread key whose destructor (`on_thread_exit`, the tracer's) sees each thread
// leave; made once at start, before the first thread state.
void make_thread_key(void (*on_thread_exit)(void*));

// The full-ring and serve-boundary paths of push_event, out of line (rare).
__attribute__((noinline)) bool wait_for_slots_in_full_ring(ThreadState* ts, uint64_t slots);
__attribute__((noinline, cold)) void at_serve_boundary(ThreadState* ts, bool at_serve_point);

// Inline, the common case: the room is there, and a call's prologue showed in a churn.
inline bool wait_for_slots(ThreadState* ts, uint64_t slots) {
  return __builtin_expect(ts->ring.has_room(slots), 1) || wait_for_slots_in_full_ring(ts, slots);
}

// Pushes one raw event. In the header so that its callers' compiler sees it whole, as when
// it was one file's own; the recording paths' hot path.
// `at_serve_point`: the caller holds none of the allocator's locks (after an allocation,
// before a free), unlike the mmap family's, which allocators call from inside.
// `call`: an allocation's trace::AllocCall and log2 of its alignment (alloc_call_bits).
// Always inlined into the two below, each of six arguments: a copy of seven, out of line,
// took its seventh from the stack on every event (docs/performance.md).
__attribute__((always_inline)) inline void push_event_with_call(ThreadState* ts, EventKind kind, uint64_t a,
                                                                uint64_t b, uint32_t stack, bool at_serve_point,
                                                                uint16_t call) {
  if (!wait_for_slots(ts, 1)) return;
  RawEvent& e = ts->ring.slot_at(0);
  // Numbered after the space is there, right before publishing (event_order.h).
  e.seq = number_event(ts->ring, g_tracer.numbers, kind);
  e.a = a;
  e.b = b;
  e.stack_or_length = stack;
  e.kind = kind;
  e.call = call;
  ts->ring.publish(1);
  ts->ring.prefetch_ahead_for_write();
  if (__builtin_expect(ts->ring.tail() % kServeEvery == 0, 0)) at_serve_boundary(ts, at_serve_point);
}
inline void push_event(ThreadState* ts, EventKind kind, uint64_t a, uint64_t b, uint32_t stack,
                       bool at_serve_point = false) {
  push_event_with_call(ts, kind, a, b, stack, at_serve_point, 0);
}
// An allocation (kAlloc, kRealloc), at a serve point.
inline void push_alloc_event(ThreadState* ts, EventKind kind, uint64_t a, uint64_t b, uint32_t stack, uint16_t call) {
  push_event_with_call(ts, kind, a, b, stack, true, call);
}

}  // namespace memstage::preload
