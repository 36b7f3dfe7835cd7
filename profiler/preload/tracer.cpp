// The tracer's life in the process: start, exit, fork, fatal signals, and the program's
// waits and sleeps handed to the writer. The recording paths are record_paths.cpp and
// stage_records.cpp, on the recording core (recording_core.h); the interposed symbols are
// interpose*.cpp (hooked_functions.h lists them).
#include "profiler/preload/tracer.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "profiler/preload/fatal_signals.h"
#include "profiler/preload/python_frames.h"
#include "profiler/preload/record_paths.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/sample_records.h"
#include "profiler/preload/samplers.h"
#include "profiler/preload/stage_records.h"
#include "profiler/preload/writer.h"
#include "profiler/trace/trace_records.h"

// glibc's sigaction under its other name: the preload's own `sigaction` is the program's.
extern "C" int __sigaction(int signo, const struct sigaction* action, struct sigaction* old);

namespace memstage::preload {

namespace {

namespace records = trace::records;

// The key destructor: the thread is on its way out, but keeps its state until it is gone
// (claim_thread_state), so that what it frees and allocates after this is still recorded
// without taking a new state.
void mark_thread_exiting(void* state) {
  auto* ts = static_cast<ThreadState*>(state);
  // Stats and sample modes: the thread's heap change goes into the process's now, not when
  // a later thread takes the state over (its blocks may be freed by others meanwhile).
  if (counting_mode() && recording() && ts == t_thread.state) fold_heap_bytes(ts);
  ts->exiting.store(true, std::memory_order_release);
}

void write_signal_record(int signo) {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  push_record(ts, records::Signal{trace_time_ns(), static_cast<uint64_t>(signo)});
  push_rss_high_water(ts);
}

bool is_ending_signal(int signo);
void install_handler(int signo);

bool tracer_handles(int signo) {
  for (const FatalSignal& s : kFatalSignals) if (s.signo == signo) return true;
  return is_ending_signal(signo);
}

bool is_ending_signal(int signo) {
  for (int s : kEndingSignals) if (s == signo) return true;
  return false;
}

void on_fatal_signal(int signo) {
  {
    KeepErrno keep;
    // An ending signal inside the tracer waits for the thread to leave it (leave_tracer):
    // the ring may be mid-push and the writer's lock held by this very thread. SA_RESETHAND
    // put the default back: the handler goes back in, for the signal raised again.
    if (t_thread.in_tracer && is_ending_signal(signo) && t_thread.deferred_signal == 0) {
      t_thread.deferred_signal = signo;
      install_handler(signo);
      return;
    }
    // A fault inside the tracer cannot wait: this thread's ring may hold a half-pushed
    // event, so the other threads' events are written and no record is added here.
    const bool ring_usable = !t_thread.in_tracer;
    RecordingGuard guard;
    if (!in_child_sharing_memory() && stop_recording_once()) {
      if (ring_usable) write_signal_record(signo);
      writer_flush(true, true);
    }
  }
  // SA_RESETHAND restored the default action: re-raise so the process dies as it would
  // have (core dump, exit status) without the tracer.
  raise(signo);
}

}  // namespace

namespace {

void install_handler(int signo) {
  struct sigaction action{};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
  __sigaction(signo, &action, nullptr);
}

bool ours_installed(int signo) {
  struct sigaction current{};
  return __sigaction(signo, nullptr, &current) == 0 && current.sa_handler == on_fatal_signal;
}

void install_signal_handlers() {
  // Leave the program's own handlers (and what it ignores) alone.
  auto install_over_default = [](int signo) {
    struct sigaction current{};
    if (__sigaction(signo, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) install_handler(signo);
  };
  for (const FatalSignal& s : kFatalSignals) install_over_default(s.signo);
  for (int signo : kEndingSignals) install_over_default(signo);
}

}  // namespace

// The program's sigaction: where the tracer's handler stands in for the default action,
// the program sees (and may set) the default action, as it would without the tracer:
// Python, for one, installs its SIGINT handler only over SIG_DFL.
int program_sigaction(int signo, const struct sigaction* action, struct sigaction* old) {
  if (!tracer_handles(signo)) return __sigaction(signo, action, old);
  const bool ours = ours_installed(signo);
  const bool sets_default = action && action->sa_handler == SIG_DFL && !(action->sa_flags & SA_SIGINFO);
  if (!ours && !(sets_default && recording())) return __sigaction(signo, action, old);
  struct sigaction previous{};
  if (ours) {
    previous.sa_handler = SIG_DFL;
  } else if (__sigaction(signo, nullptr, &previous) != 0) {
    return -1;
  }
  if (sets_default) {
    install_handler(signo);
  } else if (action && __sigaction(signo, action, nullptr) != 0) {
    return -1;
  }
  if (old) *old = previous;
  return 0;
}

void remove_signal_handlers() {
  for (int signo = 1; signo < 32; ++signo) {
    if (!tracer_handles(signo) || !ours_installed(signo)) continue;
    struct sigaction action{};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    __sigaction(signo, &action, nullptr);
  }
}

namespace {

bool map_process_mark() {
  // The library's page becomes anonymous memory of its own, the only kind a fork can wipe;
  // once (an attach after a detach finds it so, not recording).
  static bool mapped = false;
  if (!mapped) {
    if (!tracer_map_at(&g_process_mark, sizeof(ProcessMark))) return false;
    // Without MADV_WIPEONFORK (Linux < 4.14) a raw clone child would wait on a writer it has not.
    if (madvise(&g_process_mark, sizeof(ProcessMark), MADV_WIPEONFORK) != 0) return false;
    mapped = true;
  }
  g_process_mark.pid = static_cast<int>(syscall(SYS_getpid));
  return true;
}

void before_fork() {
  g_tracer.recording_at_fork = recording();
  if (!g_tracer.recording_at_fork) return;
  t_thread.in_tracer = true;
  writer_before_fork();
  pthread_mutex_lock(&g_tracer.threads_mutex);
  g_tracer.stacks.lock();
  pthread_mutex_lock(&g_tracer.stage_mutex);
}

void after_fork_parent() {
  if (!g_tracer.recording_at_fork) return;
  pthread_mutex_unlock(&g_tracer.stage_mutex);
  g_tracer.stacks.unlock();
  pthread_mutex_unlock(&g_tracer.threads_mutex);
  writer_after_fork_parent();
  leave_tracer(false);
}

void after_fork_child() {
  if (!g_tracer.recording_at_fork) return;
  // The mark page came zeroed (MADV_WIPEONFORK): this child is one the handlers saw.
  g_process_mark.pid = static_cast<int>(syscall(SYS_getpid));
  // The child's trace counts its time from its own start, as its process info says (its
  // start_realtime_ns is now): a job's processes then line up on one clock.
  g_tracer.start_monotonic_ns = monotonic_ns();
  pthread_mutex_init(&g_tracer.stage_mutex, nullptr);
  // The child's trace says what the child dropped.
  g_tracer.stage_begins_dropped[0] = g_tracer.stage_begins_dropped[1] = 0;
  g_tracer.stacks.reset_lock_after_fork();
  pthread_mutex_init(&g_tracer.threads_mutex, nullptr);
  // Only this thread lives on in the child; what the parent's threads had not written
  // yet is the parent's.
  const uint32_t n = g_tracer.thread_count.load();
  for (uint32_t i = 0; i < n; ++i) {
    ThreadState* ts = g_tracer.threads[i];
    ts->ring.reset();
    if (ts != t_thread.state) ts->retired.store(true);
  }
  if (t_thread.state) t_thread.state->owner_tid = current_tid();
  open_rss_source();
  g_tracer.approx_live_bytes.store(0);
  g_tracer.rss_sampled_at_live_bytes.store(0);
  g_tracer.allocator_sampled_at_high_ns.store(0);
  g_tracer.allocator_sample_pending.store(false);
  // Stats and sample modes count the child's heap from zero, as full and aggregate modes do:
  // the blocks it inherits are its parent's, counted there (docs/jobs.md); so are the
  // uncounted changes of every thread. Its frees of them are left out (OwnBlocks); should
  // that table give up, sample mode still knows its sampled blocks as the parent's.
  for (uint32_t i = 0; i < n; ++i) {
    g_tracer.threads[i]->heap_unfolded_bytes = 0;
    g_tracer.threads[i]->heap_unfolded_high_bytes = 0;
  }
  g_tracer.heap_live_bytes.store(0);
  g_tracer.heap_high_bytes.store(0);
  g_tracer.rss_high_written_bytes.store(0);
  if (sample_mode()) g_tracer.sampled_blocks.mark_inherited();
  // From here the child tells each free of its inheritance from one of its own blocks.
  if (counting_mode() && g_tracer.options.follow_fork) g_tracer.own_blocks.start_in_child();
  set_recording(g_tracer.options.follow_fork);
  writer_after_fork_child(g_tracer.options.follow_fork);
  t_thread.deferred_signal = 0;  // the parent's, caught while it forked
  t_thread.in_tracer = false;
}

}  // namespace

uint64_t before_wait(uint64_t wait_ns) {
  // Inside the tracer (a signal handler interrupted it), the round would meet its own
  // half-written state: skipped.
  if (wait_ns == kNoWait || t_thread.in_tracer || !recording() || writer_thread_running()) return 0;
  // Cheap when nothing is due: a wait may come with every read.
  const uint64_t now = monotonic_ns();
  const bool long_wait = wait_ns != kUnknownWait && wait_ns >= g_tracer.options.sample_interval_ms * 1'000'000ull;
  const bool round_due = long_wait || writer_round_due(now);
  if (!round_due && now - g_tracer.rss_sampled_at_ns.load(std::memory_order_relaxed) < kWaitRssGapNs) return now;
  if (in_child_sharing_memory()) return 0;
  RecordingGuard guard;
  KeepErrno keep;
  if (round_due) {
    writer_serve_inline(long_wait ? ServePoint::kLongWait : ServePoint::kWait);
  } else if (ThreadState* ts = current_thread_state()) {
    // Once the timeline coarsens a wait writes RSS only above its high (writer.cpp,
    // force_tick_before_sleep): an event loop's waits come by the thousand a second.
    if (writer_tick_interval_ns() > g_tracer.options.sample_interval_ms * 1'000'000ull) {
      push_rss_if_high(ts);
    } else {
      push_rss(ts);
    }
  }
  return now;
}

void after_wait(uint64_t started_ns) {
  if (started_ns == 0 || t_thread.in_tracer || !recording() || writer_thread_running()) return;
  // The wake is dated only after a wait of a (coarsened) tick or more, as a tick would.
  if (monotonic_ns() - started_ns < writer_tick_interval_ns()) return;
  if (in_child_sharing_memory()) return;
  RecordingGuard guard;
  KeepErrno keep;
  if (ThreadState* ts = current_thread_state()) push_record(ts, records::Time{trace_time_ns()});
}

bool sleeps_sliced() { return !t_thread.in_tracer && recording() && !writer_thread_running(); }

int sleep_sliced(clockid_t clock, uint64_t deadline_ns) {
  const uint64_t slice_ns = g_tracer.options.sample_interval_ms * 1'000'000ull;
  // A signal that comes between two slices must still end the sleep (a program may sleep
  // until its handler runs): signals stay blocked but while a slice sleeps, and each slice
  // unblocks them as it begins (ppoll), so one pending is delivered inside it and ends the
  // sleep with EINTR. Faults are never blocked: the tracer's own end on a crash stays.
  uint64_t all = ~0ull, program_mask = 0;
  for (const FatalSignal& s : kFatalSignals) all &= ~(1ull << (s.signo - 1));
  KeepErrno keep;
  if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &program_mask, sizeof(all)) != 0) return ENOSYS;
  // The allocator is asked between slices only outside signal handlers (writer.h).
  const bool allocator_safe = program_mask == 0;
  int error = 0;
  for (;;) {
    timespec now{};
    clock_gettime(clock, &now);
    const uint64_t now_ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
    if (now_ns >= deadline_ns) break;
    const uint64_t step_ns = deadline_ns - now_ns > slice_ns ? slice_ns : deadline_ns - now_ns;
    const timespec step{static_cast<time_t>(step_ns / 1'000'000'000ull), static_cast<long>(step_ns % 1'000'000'000ull)};
    if (syscall(SYS_ppoll, nullptr, 0, &step, &program_mask, sizeof(program_mask)) < 0 && errno == EINTR) {
      error = EINTR;
      break;
    }
    if (step_ns < deadline_ns - now_ns && sleeps_sliced() && !in_child_sharing_memory()) {
      RecordingGuard guard;
      writer_serve_inline(ServePoint::kSleeping, allocator_safe);
    }
  }
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &program_mask, nullptr, sizeof(program_mask));
  return error;
}

void before_second_thread() {
  if (!recording() || writer_thread_running() || in_child_sharing_memory()) return;
  RecordingGuard guard;  // pthread_create allocates the writer's stack and TLS
  writer_start_thread(true);
}

void flush_before_exec(const char* path) {
  // A vfork child shares the parent's memory: nothing of the parent's may be written.
  if (!recording() || in_child_sharing_memory()) return;
  if (ThreadState* ts = current_thread_state()) {
    constexpr size_t kMaxPath = 4096;
    const size_t length = path ? strnlen(path, kMaxPath) : 0;
    uint8_t buf[1 + 2 * trace::kMaxVarintBytes + kMaxPath];
    push_rss_high_water(ts);  // the image exec replaces takes its high-water mark along
    const records::Exec record{trace_time_ns(), std::string_view(path ? path : "", length)};
    push_encoded(ts, buf, static_cast<uint32_t>(records::encode(buf, record) - buf));
  }
  writer_flush(false, false);
}

void flush_trace() {
  if (!recording() || in_child_sharing_memory()) return;
  writer_flush(false, false);
}

void finish_trace() {
  if (!recording() || in_child_sharing_memory()) return;
  if (ThreadState* ts = current_thread_state()) {
    push_samples(ts, true, true);
    push_stage_limit_totals(ts);
    push_rss_high_water(ts);
    push_record(ts, records::End{trace_time_ns()});
  }
  writer_finish();
  set_recording(false);
}

void start_tracer() { start_tracer_with(read_options(), false); }

void start_tracer_with(const Options& options, bool writer_thread_now) {
  g_tracer.options = options;
  if (g_tracer.options.output_dir[0] == '\0') return;
  g_tracer.start_monotonic_ns = monotonic_ns();
  find_own_code();
  detect_prefetch_for_write();
  // Stats mode numbers no allocations: no fence to pay for in every drain.
  g_tracer.numbers.allocations_read = !stats_mode() && register_thread_fence();
  if (!g_tracer.stacks.init() || !map_process_mark()) return;
  if (sample_mode() && !g_tracer.sampled_blocks.init()) return;
  // Once: an attach whose start failed may start again (each key and fork handler is for life).
  static pthread_once_t key_made = PTHREAD_ONCE_INIT;
  pthread_once(&key_made, [] { make_thread_key(mark_thread_exiting); });
  // The core's serve points run the writer's round through this, calling nothing above it.
  set_serve_round([] { writer_serve_inline(ServePoint::kCall); });
  // Stats mode walks no stack: libunwind's caches (whose setup writes them) stay as they are.
  if (!stats_mode()) unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  open_rss_source();
  detect_allocator();
  if (!writer_open(static_cast<uint64_t>(getppid()))) return;
  static pthread_once_t fork_handlers_set = PTHREAD_ONCE_INIT;
  pthread_once(&fork_handlers_set, [] { pthread_atfork(before_fork, after_fork_parent, after_fork_child); });
  install_signal_handlers();
  set_recording(true);
  if (writer_thread_now && !writer_start_thread(false)) {
    set_recording(false);
    return;
  }
  if (ThreadState* ts = current_thread_state()) push_samples(ts, true);
  python_watch_bootstrap();
}

}  // namespace memstage::preload
