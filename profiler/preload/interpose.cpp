// The symbols libmemstage_preload.so puts in front of the allocator's and libc's:
// the malloc family, anonymous mmap, dlopen/dlclose, the exec family, _exit, the signal
// functions, the descriptors of libunwind's pipe, and the stage API (hooked_functions.h
// lists them; the waits are in interpose_waits.cpp). Each passes the call on unchanged
// (same pointers, errno, alignment errors) to what real_functions.h found, and records
// it around the call.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "profiler/preload/descriptors.h"
#include "profiler/preload/got_hooks.h"
#include "profiler/preload/python_frames.h"
#include "profiler/preload/real_functions.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/tracer.h"

#define MEMSTAGE_EXPORT extern "C" __attribute__((visibility("default")))

namespace memstage::preload {
namespace {

// 0: not started, 1: starting, 2: started (recording, or passive without MEMSTAGE_OUTPUT).
std::atomic<int> g_start_state{0};

// Starts the tracer once: on the program's first call to the malloc family, or in the
// preload's constructor if none came earlier. ld.so runs the constructors of the
// program's libraries before the preload's; what they allocate is the program's. libc
// must have set up the environment the options come from. Never from mmap and the
// like: allocators call those from inside themselves, holding their locks, and starting
// allocates (a program's own allocator, as Chromium's, would be entered again).
bool start_once() {
  if (t_thread.in_tracer || !environ) return false;
  int expected = 0;
  if (!g_start_state.compare_exchange_strong(expected, 1)) return false;
  {
    RecordingGuard guard;
    resolve();
    start_tracer();
  }
  g_start_state.store(2, std::memory_order_release);
  return recording();
}

// True when this call should be recorded: the tracer is on, and the call comes from
// the program rather than from the tracer or the allocator itself.
inline bool should_record() { return !t_thread.in_tracer && recording(); }

// For the malloc family, called from `caller` (its return address): also not the dynamic
// loader's own bookkeeping (real_functions.h, called_from_loader), which never starts the tracer.
inline bool should_record_call(const void* caller) {
  if (called_from_loader(caller)) return false;
  if (__builtin_expect(should_record(), 1)) return true;
  return __builtin_expect(g_start_state.load(std::memory_order_relaxed) == 0, 0) && start_once();
}

// Inlined: one frame fewer for the unwinder to step through on every traced allocation.
// `call`: alloc_call_bits of the call made.
__attribute__((always_inline)) inline void* traced_alloc_result(void* p, size_t size, uint16_t call) {
  if (counting_mode()) {
    ThreadState* ts = current_thread_state();
    if (p && ts) counted_alloc(ts, p, size, false);
    return p;
  }
  if (p) {
    KeepErrno keep;
    record_alloc(p, size, call);
  }
  return p;
}

[[noreturn]] void exit_without_atexit(void (*real_exit)(int), int status) {
  {
    RecordingGuard guard;
    finish_trace();
  }
  if (real_exit) real_exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

__attribute__((constructor)) void memstage_preload_init() { start_once(); }

__attribute__((destructor)) void memstage_preload_fini() {
  RecordingGuard guard;
  finish_trace();
}

}  // namespace
}  // namespace memstage::preload

using namespace memstage::preload;
using memstage::trace::AllocCall;

namespace {

// The common case of stats and sample modes, kept to a few loads and no guard: the state
// of the calling thread when this call (from `caller`) is counted there, nullptr in every
// other case (the tracer's own calls, the loader's, a thread's first call), which takes the
// general path. The caller has read the recording byte (stats or sample) first: in the
// other modes, or before start, that one load is all the fast path costs. Anything in these
// modes that may allocate (unwinding a sampled call, sampling RSS at a new heap high) sets
// the re-entry guard itself.
__attribute__((always_inline)) inline ThreadState* counting_thread(const void* caller) {
  ThreadState* ts = t_thread.state;
  if (__builtin_expect(!ts || t_thread.in_tracer || called_from_loader(caller), 0)) return nullptr;
  return ts;
}

__attribute__((noinline)) void* malloc_general(size_t size, const void* caller) {
  if (!resolve()) return bootstrap_alloc(size, 16);
  if (!should_record_call(caller)) return g_real.malloc(size);
  if (stats_mode()) return traced_alloc_result(g_real.malloc(size), size, alloc_call_bits(AllocCall::kMalloc));
  RecordingGuard guard;
  return traced_alloc_result(g_real.malloc(size), size, alloc_call_bits(AllocCall::kMalloc));
}

__attribute__((noinline)) void free_general(void* p, const void* caller) {
  if (!resolve()) return;
  if (!should_record_call(caller)) return g_real.free(p);
  RecordingGuard guard;
  if (counting_mode()) {
    // Before the real free, as below.
    if (ThreadState* ts = current_thread_state()) counted_free(ts, p);
    return g_real.free(p);
  }
  {
    KeepErrno keep;
    // Before the real free: once it returns, another thread may get the same address.
    record_free(p);
  }
  g_real.free(p);
}

// The fast paths of stats and sample modes, each a function of its own that malloc and free
// jump to after one load (recording_state): each saves only the registers it needs itself.
// One path for both (kSampling: sample mode's sampler and filter besides the counting).
// What is due rarely (alloc_rest, free_rest) comes by a jump, after the straight line. The
// usable size read inline from glibc's size word, or asked from another allocator: a
// function for each, so that glibc's calls only the allocator.
template <bool kSampling>
__attribute__((noinline, cold)) void* malloc_counted_rest(ThreadState* ts, void* p, size_t size, unsigned due) {
  alloc_rest<kSampling>(ts, p, size, false, due);
  return p;
}

template <bool kSampling, bool kGlibc>
__attribute__((noinline)) void* malloc_counted(size_t size, const void* caller) {
  ThreadState* ts = counting_thread(caller);
  if (__builtin_expect(!ts, 0)) return malloc_general(size, caller);
  void* p = g_real.malloc(size);
  if (__builtin_expect(p == nullptr, 0)) return p;
  const size_t usable = kGlibc ? glibc_usable_size(p) : real_usable_size(p);
  if (const unsigned due = alloc_counted<kSampling>(ts, size, usable)) {
    return malloc_counted_rest<kSampling>(ts, p, size, due);
  }
  return p;
}

template <bool kSampling>
__attribute__((noinline, cold)) void free_counted_rest(ThreadState* ts, void* p, unsigned due) {
  free_rest<kSampling>(ts, p, due);
  g_real.free(p);
}

template <bool kSampling, bool kGlibc>
__attribute__((noinline)) void free_counted_fast(void* p, const void* caller) {
  ThreadState* ts = counting_thread(caller);
  if (__builtin_expect(!ts, 0)) return free_general(p, caller);
  // Before the real free, as in free_general.
  const size_t usable = kGlibc ? glibc_usable_size(p) : real_usable_size(p);
  if (const unsigned due = free_counted<kSampling>(ts, p, usable)) return free_counted_rest<kSampling>(ts, p, due);
  g_real.free(p);
}

// A forked child of the counting modes: the fast paths' counting, and the child's table of
// its own blocks (counted_alloc, counted_free), without the general paths' checks.
__attribute__((noinline)) void* malloc_counted_child(size_t size, const void* caller) {
  ThreadState* ts = counting_thread(caller);
  if (__builtin_expect(!ts, 0)) return malloc_general(size, caller);
  void* p = g_real.malloc(size);
  if (__builtin_expect(p != nullptr, 1)) counted_alloc(ts, p, size, false);
  return p;
}

__attribute__((noinline)) void free_counted_child(void* p, const void* caller) {
  ThreadState* ts = counting_thread(caller);
  if (__builtin_expect(!ts, 0)) return free_general(p, caller);
  counted_free(ts, p);  // before the real free, as in free_general
  g_real.free(p);
}

}  // namespace

MEMSTAGE_EXPORT void* malloc(size_t size) {
  const Recording state = recording_state();
  if (state == Recording::kStatsGlibc) return malloc_counted<false, true>(size, __builtin_return_address(0));
  if (state == Recording::kSampleGlibc) return malloc_counted<true, true>(size, __builtin_return_address(0));
  if (state == Recording::kStats) return malloc_counted<false, false>(size, __builtin_return_address(0));
  if (state == Recording::kSample) return malloc_counted<true, false>(size, __builtin_return_address(0));
  if (state == Recording::kCountedChild) return malloc_counted_child(size, __builtin_return_address(0));
  return malloc_general(size, __builtin_return_address(0));
}

MEMSTAGE_EXPORT void free(void* p) {
  if (__builtin_expect(!p || is_bootstrap(p), 0)) return;
  const Recording state = recording_state();
  if (state == Recording::kStatsGlibc) return free_counted_fast<false, true>(p, __builtin_return_address(0));
  if (state == Recording::kSampleGlibc) return free_counted_fast<true, true>(p, __builtin_return_address(0));
  if (state == Recording::kStats) return free_counted_fast<false, false>(p, __builtin_return_address(0));
  if (state == Recording::kSample) return free_counted_fast<true, false>(p, __builtin_return_address(0));
  if (state == Recording::kCountedChild) return free_counted_child(p, __builtin_return_address(0));
  free_general(p, __builtin_return_address(0));
}

MEMSTAGE_EXPORT void* calloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    if (resolve() && g_real.calloc) return g_real.calloc(count, size);  // sets ENOMEM
    errno = ENOMEM;
    return nullptr;
  }
  if (!resolve()) return bootstrap_alloc(total, 16);  // static memory is zeroed
  if (!should_record_call(__builtin_return_address(0))) return g_real.calloc(count, size);
  RecordingGuard guard;
  return traced_alloc_result(g_real.calloc(count, size), total, alloc_call_bits(AllocCall::kCalloc));
}

MEMSTAGE_EXPORT void* realloc(void* p, size_t size) {
  if (!resolve()) {
    void* q = bootstrap_alloc(size, 16);
    if (q && p) memcpy(q, p, bootstrap_size(p) < size ? bootstrap_size(p) : size);
    return q;
  }
  if (is_bootstrap(p)) {
    void* q = malloc(size);
    if (q) memcpy(q, p, bootstrap_size(p) < size ? bootstrap_size(p) : size);
    return q;
  }
  if (!should_record_call(__builtin_return_address(0))) return g_real.realloc(p, size);
  RecordingGuard guard;
  if (!p) return traced_alloc_result(g_real.realloc(nullptr, size), size, alloc_call_bits(AllocCall::kRealloc));
  bool freed_counted;
  {
    KeepErrno keep;
    freed_counted = record_free(p);
  }
  void* q = g_real.realloc(p, size);
  KeepErrno keep;  // realloc's
  if (q) {
    record_alloc(q, size, alloc_call_bits(AllocCall::kRealloc), true);
  } else if (size != 0 && freed_counted) {
    // Failed: p is still the program's (or, left out, still its parent's). Its size is
    // known here only as usable size.
    record_alloc(p, real_usable_size(p), alloc_call_bits(AllocCall::kRealloc), true);
  }
  return q;
}

MEMSTAGE_EXPORT void* reallocarray(void* p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

MEMSTAGE_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (!resolve()) {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1))) return EINVAL;
    *out = bootstrap_alloc(size, alignment);
    return *out ? 0 : ENOMEM;
  }
  if (!should_record_call(__builtin_return_address(0))) return g_real.posix_memalign(out, alignment, size);
  RecordingGuard guard;
  const int result = g_real.posix_memalign(out, alignment, size);
  if (result == 0) traced_alloc_result(*out, size, alloc_call_bits(AllocCall::kPosixMemalign, alignment));
  return result;
}

MEMSTAGE_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (!resolve()) return bootstrap_alloc(size, alignment);
  if (!should_record()) return g_real.aligned_alloc(alignment, size);
  RecordingGuard guard;
  return traced_alloc_result(g_real.aligned_alloc(alignment, size), size, alloc_call_bits(AllocCall::kAlignedAlloc, alignment));
}

MEMSTAGE_EXPORT void* memalign(size_t alignment, size_t size) {
  if (!resolve()) return bootstrap_alloc(size, alignment);
  if (!should_record_call(__builtin_return_address(0))) return g_real.memalign(alignment, size);
  RecordingGuard guard;
  return traced_alloc_result(g_real.memalign(alignment, size), size, alloc_call_bits(AllocCall::kMemalign, alignment));
}

MEMSTAGE_EXPORT void* valloc(size_t size) {
  if (!resolve()) return bootstrap_alloc(size, 4096);
  if (!should_record()) return g_real.valloc(size);
  RecordingGuard guard;
  return traced_alloc_result(g_real.valloc(size), size, alloc_call_bits(AllocCall::kValloc, 4096));
}

MEMSTAGE_EXPORT void* pvalloc(size_t size) {
  const size_t page = 4096;
  if (!resolve()) return bootstrap_alloc((size + page - 1) & ~(page - 1), page);
  // Allocators without pvalloc: it is memalign of whole pages.
  auto call = [&] {
    return g_real.pvalloc ? g_real.pvalloc(size) : g_real.memalign(page, (size + page - 1) & ~(page - 1));
  };
  if (!should_record()) return call();
  RecordingGuard guard;
  return traced_alloc_result(call(), size, alloc_call_bits(AllocCall::kPvalloc, page));
}

MEMSTAGE_EXPORT size_t malloc_usable_size(void* p) {
  if (is_bootstrap(p)) return bootstrap_size(p);
  if (!resolve()) return 0;
  return real_usable_size(p);
}

MEMSTAGE_EXPORT void* mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  void* r;
  if (g_real.mmap) {
    r = g_real.mmap(address, length, prot, flags, fd, offset);
  } else {
    const long raw = syscall(SYS_mmap, address, length, prot, flags, fd, offset);
    if (raw < 0 && raw > -4096) {
      errno = static_cast<int>(-raw);
      r = MAP_FAILED;
    } else {
      r = reinterpret_cast<void*>(raw);
    }
  }
  if (r != MAP_FAILED && (flags & MAP_ANONYMOUS) && should_record()) {
    RecordingGuard guard;
    KeepErrno keep;
    // Reserved address space (V8, Go, the JVM, sanitizers): not memory until mprotect
    // makes part of it accessible.
    const bool reserved = prot == PROT_NONE || (flags & MAP_NORESERVE);
    record_mmap(r, length, reserved);
  }
  return r;
}

MEMSTAGE_EXPORT void* mmap64(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  return mmap(address, length, prot, flags, fd, offset);
}

MEMSTAGE_EXPORT int munmap(void* address, size_t length) {
  if (should_record()) {
    RecordingGuard guard;
    KeepErrno keep;
    record_munmap(address, length);
  }
  if (g_real.munmap) return g_real.munmap(address, length);
  return static_cast<int>(syscall(SYS_munmap, address, length));
}

MEMSTAGE_EXPORT int mprotect(void* address, size_t length, int prot) {
  resolve();
  const int r = g_real.mprotect ? g_real.mprotect(address, length, prot)
                              : static_cast<int>(syscall(SYS_mprotect, address, length, prot));
  if (r == 0 && should_record()) {
    RecordingGuard guard;
    KeepErrno keep;
    record_mprotect(address, length, prot != PROT_NONE);
  }
  return r;
}

MEMSTAGE_EXPORT void* mremap(void* old_address, size_t old_length, size_t new_length, int flags, ...) {
  void* fixed_address = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list args;
    va_start(args, flags);
    fixed_address = va_arg(args, void*);
    va_end(args);
  }
  resolve();
  void* r = g_real.mremap(old_address, old_length, new_length, flags, fixed_address);
  if (r != MAP_FAILED && should_record()) {
    RecordingGuard guard;
    KeepErrno keep;
    record_mremap(old_address, old_length, r, new_length);
  }
  return r;
}

MEMSTAGE_EXPORT void* dlopen(const char* file, int mode) {
  resolve();
  // A module loaded RTLD_DEEPBIND looks up symbols in its own dependencies first: its
  // malloc and free would be libc's, not the tracer's (its allocations missed, the
  // blocks it frees reported as leaks). The flag goes, and the report says so.
  const bool deep_bind = (mode & RTLD_DEEPBIND) && should_record();
  if (deep_bind) mode &= ~RTLD_DEEPBIND;
  void* handle = g_real.dlopen(file, mode);
  // New code may sit where unloaded code was: the stack walks' rules are read again.
  if (handle) g_frame_rule_generation.fetch_add(1, std::memory_order_release);
  if (handle && deep_bind) {
    RecordingGuard guard;
    KeepErrno keep;
    record_deep_bind_removed(file);
  }
  if (handle && should_record()) {
    RecordingGuard guard;
    KeepErrno keep;
    record_modules_changed();
    got_hooks_after_dlopen();
  }
  return handle;
}

MEMSTAGE_EXPORT int dlclose(void* handle) {
  resolve();
  const int r = g_real.dlclose(handle);
  if (r == 0) g_frame_rule_generation.fetch_add(1, std::memory_order_release);
  if (r == 0 && should_record()) {
    RecordingGuard guard;
    KeepErrno keep;
    record_modules_changed();
  }
  return r;
}

// exec replaces the process without running destructors: write what is buffered first.
// The new program loads the tracer again (LD_PRELOAD is inherited) into a file of its own.
static void before_exec(const char* path) {
  RecordingGuard guard;
  KeepErrno keep;
  flush_before_exec(path);
}

MEMSTAGE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  resolve();
  before_exec(path);
  return g_real.execve(path, argv, envp);
}

MEMSTAGE_EXPORT int execv(const char* path, char* const argv[]) {
  return execve(path, argv, environ);
}

MEMSTAGE_EXPORT int execvp(const char* file, char* const argv[]) {
  resolve();
  before_exec(file);
  return g_real.execvp(file, argv);
}

MEMSTAGE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  resolve();
  before_exec(file);
  return g_real.execvpe(file, argv, envp);
}

MEMSTAGE_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  resolve();
  before_exec(nullptr);
  return g_real.fexecve(fd, argv, envp);
}

namespace {
constexpr int kMaxExecArgs = 4096;
// The execl family passes arguments as a list; collect them into an array.
int collect_args(const char* first, va_list& args, char** argv) {
  int argc = 0;
  argv[argc++] = const_cast<char*>(first);
  while (argv[argc - 1] && argc < kMaxExecArgs) argv[argc++] = va_arg(args, char*);
  if (argv[argc - 1]) {
    errno = E2BIG;
    return -1;
  }
  return argc;
}
}  // namespace

MEMSTAGE_EXPORT int execl(const char* path, const char* arg, ...) {
  char* argv[kMaxExecArgs];
  va_list args;
  va_start(args, arg);
  const int argc = collect_args(arg, args, argv);
  va_end(args);
  return argc < 0 ? -1 : execve(path, argv, environ);
}

MEMSTAGE_EXPORT int execlp(const char* file, const char* arg, ...) {
  char* argv[kMaxExecArgs];
  va_list args;
  va_start(args, arg);
  const int argc = collect_args(arg, args, argv);
  va_end(args);
  return argc < 0 ? -1 : execvp(file, argv);
}

MEMSTAGE_EXPORT int execle(const char* path, const char* arg, ...) {
  char* argv[kMaxExecArgs];
  va_list args;
  va_start(args, arg);
  const int argc = collect_args(arg, args, argv);
  char* const* envp = argc < 0 ? nullptr : va_arg(args, char* const*);
  va_end(args);
  return argc < 0 ? -1 : execve(path, argv, envp);
}

MEMSTAGE_EXPORT void _exit(int status) {
  resolve();
  exit_without_atexit(g_real.exit_now, status);
}

MEMSTAGE_EXPORT void _Exit(int status) {
  resolve();
  exit_without_atexit(g_real.exit_now_c99, status);
}

// Signal dispositions: the tracer's handlers of the signals that end the process look like
// the default action to the program (tracer.cpp, program_sigaction).
MEMSTAGE_EXPORT int sigaction(int signo, const struct sigaction* action, struct sigaction* old) {
  return program_sigaction(signo, action, old);
}

namespace {
// glibc's signal(): BSD semantics (the signal blocked in its handler, calls restarted);
// sysv_signal(): the handler runs once, unblocked.
sighandler_t set_handler(int signo, sighandler_t handler, int flags) {
  if (signo <= 0 || signo >= NSIG || handler == SIG_ERR) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction action{}, old{};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  if (!(flags & SA_NODEFER)) sigaddset(&action.sa_mask, signo);
  action.sa_flags = flags;
  return program_sigaction(signo, &action, &old) < 0 ? SIG_ERR : old.sa_handler;
}
}  // namespace

MEMSTAGE_EXPORT sighandler_t signal(int signo, sighandler_t handler) { return set_handler(signo, handler, SA_RESTART); }
MEMSTAGE_EXPORT sighandler_t bsd_signal(int signo, sighandler_t handler) {
  return set_handler(signo, handler, SA_RESTART);
}
MEMSTAGE_EXPORT sighandler_t ssignal(int signo, sighandler_t handler) { return set_handler(signo, handler, SA_RESTART); }
MEMSTAGE_EXPORT sighandler_t sysv_signal(int signo, sighandler_t handler) {
  return set_handler(signo, handler, SA_RESETHAND | SA_NODEFER);
}
MEMSTAGE_EXPORT sighandler_t __sysv_signal(int signo, sighandler_t handler) {
  return set_handler(signo, handler, SA_RESETHAND | SA_NODEFER);
}

// Descriptors opened inside the tracer: libunwind's memory-validation pipe. libunwind
// remembers its pipe's numbers; when a read from it fails (the program closed it, as
// closefrom(3) does) it closes those numbers and makes a new pipe. By then the numbers
// may be the program's files. Inside the tracer these calls reach a number of that pipe
// only while it is still the pipe adopted (descriptors.h); the program's own calls pass
// straight through.
MEMSTAGE_EXPORT int pipe2(int fds[2], int flags) {
  const int r = resolve() ? g_real.pipe2(fds, flags) : static_cast<int>(syscall(SYS_pipe2, fds, flags));
  if (r == 0 && t_thread.in_tracer) adopt_unwind_pipe(fds);
  return r;
}

MEMSTAGE_EXPORT ssize_t read(int fd, void* buffer, size_t bytes) {
  if (t_thread.in_tracer && unwind_pipe_end(fd) == PipeEnd::kLost) {
    errno = EBADF;
    return -1;
  }
  // A read may block (a pipe, a socket): a wait (tracer.h).
  const uint64_t wait_started_ns = t_thread.in_tracer ? 0 : before_wait(kUnknownWait);
  const ssize_t result = resolve() ? g_real.read(fd, buffer, bytes) : syscall(SYS_read, fd, buffer, bytes);
  after_wait(wait_started_ns);
  return result;
}

MEMSTAGE_EXPORT ssize_t write(int fd, const void* buffer, size_t bytes) {
  if (t_thread.in_tracer && unwind_pipe_end(fd) == PipeEnd::kLost) {
    errno = EBADF;
    return -1;
  }
  return resolve() && g_real.write ? g_real.write(fd, buffer, bytes) : syscall(SYS_write, fd, buffer, bytes);
}

MEMSTAGE_EXPORT int close(int fd) {
  if (t_thread.in_tracer && release_unwind_pipe_end(fd)) return 0;
  return resolve() ? g_real.close(fd) : static_cast<int>(syscall(SYS_close, fd));
}

// A program with one thread is left with one: the tracer's writer thread is made only
// when the program makes its second (writer.h), here, before it. The writer's own
// creation passes straight through.
MEMSTAGE_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*start)(void*),
                                   void* argument) {
  if (!resolve() || !g_real.pthread_create) return EAGAIN;
  if (!t_thread.in_tracer) before_second_thread();
  return g_real.pthread_create(thread, attributes, start, argument);
}


MEMSTAGE_EXPORT void memstage_tracer_stage_begin(const char* name) {
  if (!should_record()) return;
  RecordingGuard guard;
  KeepErrno keep;
  record_stage_begin(name);
}

MEMSTAGE_EXPORT void memstage_tracer_stage_end(void) {
  if (!should_record()) return;
  RecordingGuard guard;
  KeepErrno keep;
  record_stage_end();
}

// Everything recorded so far into the trace, for a report read while the program runs
// (the notebook magic's, after each cell).
MEMSTAGE_EXPORT void memstage_tracer_flush(void) {
  if (!should_record()) return;
  RecordingGuard guard;
  KeepErrno keep;
  flush_trace();
}

// The documented names, exported too: a program that declares them itself instead of
// including <memstage/stage.h> (Rust, Go, Julia or R through their C FFI, ctypes, C without
// the header) finds them here. The header's static inline wrappers never clash with these.
MEMSTAGE_EXPORT void memstage_stage_begin(const char* name) __attribute__((alias("memstage_tracer_stage_begin")));
MEMSTAGE_EXPORT void memstage_stage_end(void) __attribute__((alias("memstage_tracer_stage_end")));

// Called by the Python stage markers (memstage.py) at each stage boundary once
// torch.cuda is initialised: PyTorch's caching allocator's reserved and allocated bytes.
MEMSTAGE_EXPORT void memstage_tracer_device_cache(unsigned long long reserved_bytes,
                                                  unsigned long long allocated_bytes) {
  if (!should_record()) return;
  RecordingGuard guard;
  KeepErrno keep;
  record_device_cache(reserved_bytes, allocated_bytes);
}

// Called by the sitecustomize.py that `memstage run` puts on PYTHONPATH, with the GIL
// held, at startup and first thing in each new thread (python_frames.h).
MEMSTAGE_EXPORT int memstage_python_attach(int skip_frames) {
  python_bootstrap_attached();  // what the bootstrap did up to here was the tracer's
  if (!should_record()) return 0;
  KeepErrno keep;
  return python_attach(skip_frames);
}
