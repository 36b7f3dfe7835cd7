// The recording core (recording_core.h): the process mark, the thread states and the
// pushes into their rings. Calls nothing above it: the writer's inline round comes through
// the function set_serve_round registered.
#include "profiler/preload/recording_core.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "profiler/preload/futex.h"
#include "profiler/preload/real_functions.h"

namespace memstage::preload {

constinit ProcessMark g_process_mark;
constinit Tracer g_tracer;

constinit __thread ThreadLocals t_thread __attribute__((tls_model("initial-exec"))) = {nullptr, false, 0};

namespace {

pthread_key_t g_thread_key;
void (*g_serve_round)() = nullptr;

// True when the state's owner has exited. A thread id reused by a new thread makes it look
// alive: the state then waits for that one, never taken from a live thread.
bool owner_gone(const ThreadState* ts) {
  if (!ts->exiting.load(std::memory_order_acquire)) return false;
  KeepErrno keep;
  return syscall(SYS_tgkill, getpid(), ts->owner_tid, 0) != 0 && errno == ESRCH;
}

ThreadState* claim_thread_state() {
  pthread_mutex_lock(&g_tracer.threads_mutex);
  ThreadState* ts = nullptr;
  const uint32_t n = g_tracer.thread_count.load(std::memory_order_relaxed);
  // Reuse the state of a thread that has exited once the writer has drained it.
  for (uint32_t i = 0; i < n && !ts; ++i) {
    ThreadState* old = g_tracer.threads[i];
    if ((old->retired.load(std::memory_order_acquire) || owner_gone(old)) &&
        old->ring.free_slots() == EventRing::kSlots) {
      old->retired.store(false, std::memory_order_relaxed);
      old->exiting.store(false, std::memory_order_relaxed);
      old->last_stack.depth = 0;
      old->last_walk_stack = StackTable::kRootId;
      ts = old;
    }
  }
  if (!ts && n < Tracer::kMaxThreads) {
    void* memory = tracer_map(sizeof(ThreadState));
    if (memory) {
      // Default-initialised: the ring and the stack cache stay untouched (mapped zero) pages
      // until used.
      ts = new (memory) ThreadState;
      g_tracer.threads[n] = ts;
      g_tracer.thread_count.store(n + 1, std::memory_order_release);
    }
  }
  if (ts) ts->owner_tid = current_tid();
  pthread_mutex_unlock(&g_tracer.threads_mutex);
  return ts;
}

}  // namespace

pid_t current_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void make_thread_key(void (*on_thread_exit)(void*)) { pthread_key_create(&g_thread_key, on_thread_exit); }

void set_serve_round(void (*round)()) { g_serve_round = round; }

// A full ring's producer sleeps this long at most before it looks again. The writer wakes
// it when it makes room (EventRing::consume_to), so this only bounds a wait the writer
// cannot end (it stopped). Shorter sleeps, with more threads than cores, woke again and
// again to full rings and took the cores the writer needed (docs/performance.md).
constexpr uint64_t kRingFullWaitNs = 1'000'000;

// Waits for `slots` free slots in the caller's ring. The writer frees them; if it
// isn't running (before start, while a child restarts it) the event is dropped.
__attribute__((noinline)) bool wait_for_slots_in_full_ring(ThreadState* ts, uint64_t slots) {
  while (!ts->ring.has_room(slots)) {
    if (!writer_thread_running() || slots > EventRing::kSlots) {
      g_tracer.lost_events.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    wake_writer();
    ts->ring.wait_for_consumer(kRingFullWaitNs);
  }
  return true;
}
// Every kServeEvery events of a thread: with a writer thread, wake it if the ring is half
// full; without one, serve its round here if the caller is at a serve point (recording_core.h).
__attribute__((noinline, cold)) void at_serve_boundary(ThreadState* ts, bool at_serve_point) {
  if (writer_thread_running()) {
    if (ts->ring.free_slots() <= EventRing::kSlots / 2) wake_writer();
  } else if (at_serve_point) {
    serve_point();
  }
}

void wake_writer() {
  if (g_tracer.writer_wake_word.exchange(1, std::memory_order_relaxed) == 0) futex_wake(&g_tracer.writer_wake_word, 1);
}

void wait_for_writer_drain() {
  if (t_thread.state == g_tracer.writer_thread_state.load(std::memory_order_relaxed)) return;
  // The events published before it: a store, then this load, which x86 may swap without a fence.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint32_t begun = g_tracer.writer_drains_begun.load(std::memory_order_seq_cst);
  wake_writer();
  // A wait ran out and no drain has ended since: the writer is still held up.
  if (g_tracer.writer_drains_done.load(std::memory_order_acquire) ==
      g_tracer.writer_drains_done_at_timeout.load(std::memory_order_relaxed)) {
    return;
  }
  const uint64_t deadline_ns = monotonic_ns() + kWriterDrainWaitNs;
  for (;;) {
    const uint32_t done = g_tracer.writer_drains_done.load(std::memory_order_acquire);
    if (static_cast<int32_t>(done - begun) >= 1 || !writer_thread_running()) return;
    const uint64_t now_ns = monotonic_ns();
    if (now_ns >= deadline_ns) {
      g_tracer.writer_drains_done_at_timeout.store(done, std::memory_order_relaxed);
      return;
    }
    g_tracer.writer_drain_waiters.fetch_add(1, std::memory_order_seq_cst);
    futex_wait(&g_tracer.writer_drains_done, done, deadline_ns - now_ns);
    g_tracer.writer_drain_waiters.fetch_sub(1, std::memory_order_relaxed);
  }
}

void raise_deferred_signal() {
  const int signo = t_thread.deferred_signal;
  t_thread.deferred_signal = 0;
  raise(signo);
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

ThreadState* create_thread_state() {
  RecordingGuard guard;  // pthread_setspecific may allocate
  ThreadState* ts = claim_thread_state();
  if (!ts) {
    g_tracer.lost_events.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  t_thread.state = ts;
  pthread_setspecific(g_thread_key, ts);
  return ts;
}

void push_encoded(ThreadState* ts, const uint8_t* bytes, uint32_t length) {
  const uint32_t payload_slots = encoded_payload_slots(length);
  if (payload_slots + 1 > EventRing::kSlots / 4) {
    // Large (a module list of a big program): hand the writer a block of its own.
    auto* blob = static_cast<uint8_t*>(tracer_map(length));
    if (!blob) return;
    memcpy(blob, bytes, length);
    push_event(ts, EventKind::kEncodedBlob, reinterpret_cast<uint64_t>(blob), length, length);
    return;
  }
  if (!wait_for_slots(ts, payload_slots + 1)) return;
  for (uint32_t i = 0; i < payload_slots; ++i) {
    const uint32_t n = length - i * sizeof(RawEvent) < sizeof(RawEvent) ? length - i * sizeof(RawEvent)
                                                                        : sizeof(RawEvent);
    memcpy(&ts->ring.slot_at(1 + i), bytes + i * sizeof(RawEvent), n);
  }
  RawEvent& e = ts->ring.slot_at(0);
  e.seq = number_event(ts->ring, g_tracer.numbers, EventKind::kEncoded);
  e.stack_or_length = length;
  e.kind = EventKind::kEncoded;
  ts->ring.publish(1 + payload_slots);
}

void set_recording(bool on) {
  Recording state = Recording::kOff;
  if (on) {
    switch (g_tracer.options.mode) {
      case trace::Mode::kStats: state = glibc_allocator() ? Recording::kStatsGlibc : Recording::kStats; break;
      case trace::Mode::kSample: state = glibc_allocator() ? Recording::kSampleGlibc : Recording::kSample; break;
      default: state = Recording::kTraced; break;
    }
    if (counting_mode() && g_tracer.own_blocks.active()) state = Recording::kCountedChild;
  }
  g_process_mark.recording.store(state);
}

bool stop_recording_once() { return g_process_mark.recording.exchange(Recording::kOff) != Recording::kOff; }

bool in_child_sharing_memory() { return syscall(SYS_getpid) != g_process_mark.pid; }

__attribute__((noinline, cold)) void serve_point() {
  if (!g_serve_round || !recording() || writer_thread_running() || in_child_sharing_memory()) return;
  RecordingGuard guard;
  KeepErrno keep;
  g_serve_round();
}

}  // namespace memstage::preload
