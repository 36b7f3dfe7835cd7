// The symbols libmemstage_preload.so puts in front of the allocator's and libc's:
// the malloc family, anonymous mmap, dlopen/dlclose, the exec family, _exit, and the
// stage API. Each passes the call on unchanged (same pointers, errno, alignment
// errors) and records it around the call.
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
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
#include "profiler/preload/recording.h"
#include "profiler/preload/tracer.h"

#define MEMSTAGE_EXPORT extern "C" __attribute__((visibility("default")))

namespace memstage::preload {
namespace {

struct RealFunctions {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void*);
  void* (*mmap)(void*, size_t, int, int, int, off_t);
  int (*munmap)(void*, size_t);
  int (*mprotect)(void*, size_t, int);
  void* (*mremap)(void*, size_t, size_t, int, ...);
  void* (*dlopen)(const char*, int);
  int (*dlclose)(void*);
  int (*execve)(const char*, char* const[], char* const[]);
  int (*execvp)(const char*, char* const[]);
  int (*execvpe)(const char*, char* const[], char* const[]);
  int (*fexecve)(int, char* const[], char* const[]);
  void (*exit_now)(int);
  void (*exit_now_c99)(int);
  ssize_t (*read)(int, void*, size_t);
  ssize_t (*write)(int, const void*, size_t);
  int (*close)(int);
  int (*pipe2)(int[2], int);
  int (*pthread_create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  int (*nanosleep)(const timespec*, timespec*);
  int (*clock_nanosleep)(clockid_t, int, const timespec*, timespec*);
  unsigned (*sleep)(unsigned);
  int (*usleep)(useconds_t);
  int (*poll)(pollfd*, nfds_t, int);
  int (*ppoll)(pollfd*, nfds_t, const timespec*, const sigset_t*);
  int (*select)(int, fd_set*, fd_set*, fd_set*, timeval*);
  int (*pselect)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*);
  int (*epoll_wait)(int, epoll_event*, int, int);
  int (*epoll_pwait)(int, epoll_event*, int, int, const sigset_t*);
  pid_t (*wait)(int*);
  pid_t (*waitpid)(pid_t, int*, int);
  pid_t (*wait4)(pid_t, int*, int, rusage*);
  int (*waitid)(idtype_t, id_t, siginfo_t*, int);
  int (*pause)();
  int (*sigsuspend)(const sigset_t*);
  ssize_t (*recv)(int, void*, size_t, int);
  ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*, socklen_t*);
  ssize_t (*recvmsg)(int, msghdr*, int);
  int (*accept)(int, sockaddr*, socklen_t*);
  int (*accept4)(int, sockaddr*, socklen_t*, int);
};
RealFunctions real;
// True when the allocator is glibc's (its malloc_usable_size is libc's).
bool g_glibc_allocator = false;

// 0: not resolved, 1: dlsym running (it may allocate: served from the bootstrap arena),
// 2: resolved.
std::atomic<int> g_resolve_state{0};

// Serves allocations made before the real allocator is known. Blocks are never reused;
// freeing one is a no-op, recognised by its address.
constexpr size_t kBootstrapBytes = 1u << 20;
alignas(64) uint8_t g_bootstrap[kBootstrapBytes];
std::atomic<size_t> g_bootstrap_used{0};

bool is_bootstrap(const void* p) {
  // One compare: below the arena wraps around to far above it.
  return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_bootstrap) < kBootstrapBytes;
}

void* bootstrap_alloc(size_t size, size_t alignment) {
  if (alignment < 16) alignment = 16;
  const size_t total = size + alignment + 16;
  const size_t start = g_bootstrap_used.fetch_add(total, std::memory_order_relaxed);
  if (start + total > kBootstrapBytes) {
    errno = ENOMEM;
    return nullptr;
  }
  uintptr_t p = reinterpret_cast<uintptr_t>(g_bootstrap + start) + 16;
  p = (p + alignment - 1) & ~(uintptr_t)(alignment - 1);
  reinterpret_cast<size_t*>(p)[-1] = size;
  return reinterpret_cast<void*>(p);
}
size_t bootstrap_size(const void* p) { return static_cast<const size_t*>(p)[-1]; }

// True when `f` is where a defined symbol starts. An executable that is not PIE and takes
// a function's address (Debian's python3 does with malloc and free) exports it as an
// undefined symbol whose value is its PLT stub (a "canonical PLT entry"): dladdr names
// that symbol, undefined (SHN_UNDEF), for the stub's address.
bool is_definition(void* f) {
  Dl_info info;
  ElfW(Sym)* symbol = nullptr;
  return dladdr1(f, &info, reinterpret_cast<void**>(&symbol), RTLD_DL_SYMENT) != 0 && info.dli_saddr == f &&
         symbol && symbol->st_shndx != SHN_UNDEF;
}

// The first loaded object, in load order (the global scope's, for what the program loaded
// at start), that defines `name` itself, this library aside; nullptr when none does.
void* first_definition(const char* name) {
  Dl_info self;
  if (!dladdr(reinterpret_cast<void*>(&first_definition), &self)) return nullptr;
  link_map* map = nullptr;
  void* program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
  if (!program || dlinfo(program, RTLD_DI_LINKMAP, &map) != 0) map = nullptr;
  if (program) dlclose(program);
  for (link_map* l = map ? map->l_next : nullptr; l; l = l->l_next) {
    void* handle = l->l_name && *l->l_name ? dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
    if (!handle) continue;
    void* f = dlsym(handle, name);
    dlclose(handle);
    link_map* owner = nullptr;
    Dl_info info;
    if (f && is_definition(f) && dladdr1(f, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) && owner == l &&
        info.dli_fbase != self.dli_fbase) {
      return f;
    }
  }
  return nullptr;
}

// `scope`: RTLD_NEXT when preloaded (the definitions after this library's); RTLD_DEFAULT
// when attached (got_hooks.cpp: loaded late, outside the global scope, RTLD_NEXT would
// search only this library's own dependencies and find libc's, while the program may
// call another allocator's). A name not found there keeps what it had. Attached, a
// canonical PLT stub (is_definition) is a jump through a slot that now holds the tracer's
// function, which would call itself: the definition behind the stub is taken instead.
template <typename F>
void resolve_one(void* scope, F& slot, const char* name) {
  void* f = dlsym(scope, name);
  if (f && scope == RTLD_DEFAULT && !is_definition(f)) f = first_definition(name);
  if (f) slot = reinterpret_cast<F>(f);
}

void resolve_all(void* scope) {
  resolve_one(scope, real.malloc, "malloc");
  resolve_one(scope, real.free, "free");
  resolve_one(scope, real.calloc, "calloc");
  resolve_one(scope, real.realloc, "realloc");
  resolve_one(scope, real.posix_memalign, "posix_memalign");
  resolve_one(scope, real.aligned_alloc, "aligned_alloc");
  resolve_one(scope, real.memalign, "memalign");
  resolve_one(scope, real.valloc, "valloc");
  resolve_one(scope, real.pvalloc, "pvalloc");
  resolve_one(scope, real.malloc_usable_size, "malloc_usable_size");
  resolve_one(scope, real.mmap, "mmap");
  resolve_one(scope, real.munmap, "munmap");
  resolve_one(scope, real.mprotect, "mprotect");
  resolve_one(scope, real.mremap, "mremap");
  resolve_one(scope, real.dlopen, "dlopen");
  resolve_one(scope, real.dlclose, "dlclose");
  resolve_one(scope, real.execve, "execve");
  resolve_one(scope, real.execvp, "execvp");
  resolve_one(scope, real.execvpe, "execvpe");
  resolve_one(scope, real.fexecve, "fexecve");
  resolve_one(scope, real.exit_now, "_exit");
  resolve_one(scope, real.exit_now_c99, "_Exit");
  resolve_one(scope, real.read, "read");
  resolve_one(scope, real.write, "write");
  resolve_one(scope, real.close, "close");
  resolve_one(scope, real.pipe2, "pipe2");
  resolve_one(scope, real.pthread_create, "pthread_create");
  resolve_one(scope, real.nanosleep, "nanosleep");
  resolve_one(scope, real.clock_nanosleep, "clock_nanosleep");
  resolve_one(scope, real.sleep, "sleep");
  resolve_one(scope, real.usleep, "usleep");
  resolve_one(scope, real.poll, "poll");
  resolve_one(scope, real.ppoll, "ppoll");
  resolve_one(scope, real.select, "select");
  resolve_one(scope, real.pselect, "pselect");
  resolve_one(scope, real.epoll_wait, "epoll_wait");
  resolve_one(scope, real.epoll_pwait, "epoll_pwait");
  resolve_one(scope, real.wait, "wait");
  resolve_one(scope, real.waitpid, "waitpid");
  resolve_one(scope, real.wait4, "wait4");
  resolve_one(scope, real.waitid, "waitid");
  resolve_one(scope, real.pause, "pause");
  resolve_one(scope, real.sigsuspend, "sigsuspend");
  resolve_one(scope, real.recv, "recv");
  resolve_one(scope, real.recvfrom, "recvfrom");
  resolve_one(scope, real.recvmsg, "recvmsg");
  resolve_one(scope, real.accept, "accept");
  resolve_one(scope, real.accept4, "accept4");
  Dl_info info;
  g_glibc_allocator = real.malloc_usable_size && dladdr(reinterpret_cast<void*>(real.malloc_usable_size), &info) &&
                      info.dli_fname && strstr(info.dli_fname, "/libc.so");
}

bool resolve_slow() {
  int expected = 0;
  if (!g_resolve_state.compare_exchange_strong(expected, 1)) return false;
  resolve_all(RTLD_NEXT);
  find_loader_text();
  g_resolve_state.store(2, std::memory_order_release);
  return true;
}

inline bool resolve() {
  return __builtin_expect(g_resolve_state.load(std::memory_order_acquire) == 2, 1) || resolve_slow();
}

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
// loader's own bookkeeping (tracer.h, called_from_loader), which never starts the tracer.
inline bool should_record_call(const void* caller) {
  if (called_from_loader(caller)) return false;
  if (__builtin_expect(should_record(), 1)) return true;
  return __builtin_expect(g_start_state.load(std::memory_order_relaxed) == 0, 0) && start_once();
}

// Inlined: one frame fewer for the unwinder to step through on every traced allocation.
__attribute__((always_inline)) inline void* traced_alloc_result(void* p, size_t size) {
  if (counting_mode()) {
    ThreadState* ts = current_thread_state();
    if (p && ts) counted_alloc(ts, p, size, false);
    return p;
  }
  if (p) {
    const int saved_errno = errno;
    record_alloc(p, size, false);
    errno = saved_errno;
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

void resolve_from_program() {
  resolve();
  resolve_all(RTLD_DEFAULT);
}

size_t real_usable_size(void* p) {
  return real.malloc_usable_size && p ? real.malloc_usable_size(p) : 0;
}

namespace {
// glibc's malloc_usable_size also reads the next chunk's header, which for a pointer that
// is no block (a stack address) can fault inside the tracer, where free would have stopped
// the program with its own message and abort. The size word just before the block is the
// first thing free reads: read only that (chunk size less the header, the whole header for
// an mmapped chunk), and leave the rest to free. Not clamped at zero: a size word below
// glibc's smallest chunk (32 bytes) is no block's, and free stops the program on it
// ("free(): invalid size") before it uses anything, so a count wrapped by it is never read
// by a program that goes on.
inline size_t glibc_usable_size(const void* p) {
  constexpr size_t kSizeBytes = sizeof(size_t);
  constexpr size_t kMmappedBit = 2;
  const size_t word = static_cast<const size_t*>(p)[-1];
  // The header: one size word, two for an mmapped chunk ((word & kMmappedBit) << 2 is
  // kSizeBytes then).
  static_assert(kMmappedBit << 2 == kSizeBytes);
  return (word & ~static_cast<size_t>(7)) - kSizeBytes - ((word & kMmappedBit) << 2);
}
}  // namespace

size_t live_block_usable_size(void* p) { return g_glibc_allocator ? glibc_usable_size(p) : real_usable_size(p); }
bool glibc_allocator() { return g_glibc_allocator; }

}  // namespace memstage::preload

using namespace memstage::preload;

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
  if (!should_record_call(caller)) return real.malloc(size);
  if (stats_mode()) return traced_alloc_result(real.malloc(size), size);
  RecordingGuard guard;
  return traced_alloc_result(real.malloc(size), size);
}

__attribute__((noinline)) void free_general(void* p, const void* caller) {
  if (!resolve()) return;
  if (!should_record_call(caller)) return real.free(p);
  RecordingGuard guard;
  if (counting_mode()) {
    // Before the real free, as below.
    if (ThreadState* ts = current_thread_state()) counted_free(ts, p);
    return real.free(p);
  }
  const int saved_errno = errno;
  // Before the real free: once it returns, another thread may get the same address.
  record_free(p);
  errno = saved_errno;
  real.free(p);
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
  void* p = real.malloc(size);
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
  real.free(p);
}

template <bool kSampling, bool kGlibc>
__attribute__((noinline)) void free_counted_fast(void* p, const void* caller) {
  ThreadState* ts = counting_thread(caller);
  if (__builtin_expect(!ts, 0)) return free_general(p, caller);
  // Before the real free, as in free_general.
  const size_t usable = kGlibc ? glibc_usable_size(p) : real_usable_size(p);
  if (const unsigned due = free_counted<kSampling>(ts, p, usable)) return free_counted_rest<kSampling>(ts, p, due);
  real.free(p);
}

}  // namespace

MEMSTAGE_EXPORT void* malloc(size_t size) {
  const Recording state = recording_state();
  if (state == Recording::kStatsGlibc) return malloc_counted<false, true>(size, __builtin_return_address(0));
  if (state == Recording::kSampleGlibc) return malloc_counted<true, true>(size, __builtin_return_address(0));
  if (state == Recording::kStats) return malloc_counted<false, false>(size, __builtin_return_address(0));
  if (state == Recording::kSample) return malloc_counted<true, false>(size, __builtin_return_address(0));
  return malloc_general(size, __builtin_return_address(0));
}

MEMSTAGE_EXPORT void free(void* p) {
  if (__builtin_expect(!p || is_bootstrap(p), 0)) return;
  const Recording state = recording_state();
  if (state == Recording::kStatsGlibc) return free_counted_fast<false, true>(p, __builtin_return_address(0));
  if (state == Recording::kSampleGlibc) return free_counted_fast<true, true>(p, __builtin_return_address(0));
  if (state == Recording::kStats) return free_counted_fast<false, false>(p, __builtin_return_address(0));
  if (state == Recording::kSample) return free_counted_fast<true, false>(p, __builtin_return_address(0));
  free_general(p, __builtin_return_address(0));
}

MEMSTAGE_EXPORT void* calloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    if (resolve() && real.calloc) return real.calloc(count, size);  // sets ENOMEM
    errno = ENOMEM;
    return nullptr;
  }
  if (!resolve()) return bootstrap_alloc(total, 16);  // static memory is zeroed
  if (!should_record_call(__builtin_return_address(0))) return real.calloc(count, size);
  RecordingGuard guard;
  return traced_alloc_result(real.calloc(count, size), total);
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
  if (!should_record_call(__builtin_return_address(0))) return real.realloc(p, size);
  RecordingGuard guard;
  if (!p) return traced_alloc_result(real.realloc(nullptr, size), size);
  int saved_errno = errno;
  record_free(p);
  errno = saved_errno;
  void* q = real.realloc(p, size);
  saved_errno = errno;
  if (q) {
    record_alloc(q, size, true);
  } else if (size != 0) {
    // Failed: p is still the program's. Its size is known here only as usable size.
    record_alloc(p, real_usable_size(p), true);
  }
  errno = saved_errno;
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
  if (!should_record_call(__builtin_return_address(0))) return real.posix_memalign(out, alignment, size);
  RecordingGuard guard;
  const int result = real.posix_memalign(out, alignment, size);
  if (result == 0) traced_alloc_result(*out, size);
  return result;
}

MEMSTAGE_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (!resolve()) return bootstrap_alloc(size, alignment);
  if (!should_record()) return real.aligned_alloc(alignment, size);
  RecordingGuard guard;
  return traced_alloc_result(real.aligned_alloc(alignment, size), size);
}

MEMSTAGE_EXPORT void* memalign(size_t alignment, size_t size) {
  if (!resolve()) return bootstrap_alloc(size, alignment);
  if (!should_record_call(__builtin_return_address(0))) return real.memalign(alignment, size);
  RecordingGuard guard;
  return traced_alloc_result(real.memalign(alignment, size), size);
}

MEMSTAGE_EXPORT void* valloc(size_t size) {
  if (!resolve()) return bootstrap_alloc(size, 4096);
  if (!should_record()) return real.valloc(size);
  RecordingGuard guard;
  return traced_alloc_result(real.valloc(size), size);
}

MEMSTAGE_EXPORT void* pvalloc(size_t size) {
  const size_t page = 4096;
  if (!resolve()) return bootstrap_alloc((size + page - 1) & ~(page - 1), page);
  // Allocators without pvalloc: it is memalign of whole pages.
  auto call = [&] {
    return real.pvalloc ? real.pvalloc(size) : real.memalign(page, (size + page - 1) & ~(page - 1));
  };
  if (!should_record()) return call();
  RecordingGuard guard;
  return traced_alloc_result(call(), size);
}

MEMSTAGE_EXPORT size_t malloc_usable_size(void* p) {
  if (is_bootstrap(p)) return bootstrap_size(p);
  if (!resolve()) return 0;
  return real_usable_size(p);
}

MEMSTAGE_EXPORT void* mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  void* r;
  if (real.mmap) {
    r = real.mmap(address, length, prot, flags, fd, offset);
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
    const int saved_errno = errno;
    // Reserved address space (V8, Go, the JVM, sanitizers): not memory until mprotect
    // makes part of it accessible.
    const bool reserved = prot == PROT_NONE || (flags & MAP_NORESERVE);
    record_mmap(r, length, reserved);
    errno = saved_errno;
  }
  return r;
}

MEMSTAGE_EXPORT void* mmap64(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  return mmap(address, length, prot, flags, fd, offset);
}

MEMSTAGE_EXPORT int munmap(void* address, size_t length) {
  if (should_record()) {
    RecordingGuard guard;
    const int saved_errno = errno;
    record_munmap(address, length);
    errno = saved_errno;
  }
  if (real.munmap) return real.munmap(address, length);
  return static_cast<int>(syscall(SYS_munmap, address, length));
}

MEMSTAGE_EXPORT int mprotect(void* address, size_t length, int prot) {
  resolve();
  const int r = real.mprotect ? real.mprotect(address, length, prot)
                              : static_cast<int>(syscall(SYS_mprotect, address, length, prot));
  if (r == 0 && should_record()) {
    RecordingGuard guard;
    const int saved_errno = errno;
    record_mprotect(address, length, prot != PROT_NONE);
    errno = saved_errno;
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
  void* r = real.mremap(old_address, old_length, new_length, flags, fixed_address);
  if (r != MAP_FAILED && should_record()) {
    RecordingGuard guard;
    const int saved_errno = errno;
    record_mremap(old_address, old_length, r, new_length);
    errno = saved_errno;
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
  void* handle = real.dlopen(file, mode);
  // New code may sit where unloaded code was: the stack walks' rules are read again.
  if (handle) g_frame_rule_generation.fetch_add(1, std::memory_order_release);
  if (handle && deep_bind) {
    RecordingGuard guard;
    const int saved_errno = errno;
    record_deep_bind_removed(file);
    errno = saved_errno;
  }
  if (handle && should_record()) {
    RecordingGuard guard;
    const int saved_errno = errno;
    record_modules_changed();
    got_hooks_after_dlopen();
    errno = saved_errno;
  }
  return handle;
}

MEMSTAGE_EXPORT int dlclose(void* handle) {
  resolve();
  const int r = real.dlclose(handle);
  if (r == 0) g_frame_rule_generation.fetch_add(1, std::memory_order_release);
  if (r == 0 && should_record()) {
    RecordingGuard guard;
    const int saved_errno = errno;
    record_modules_changed();
    errno = saved_errno;
  }
  return r;
}

// exec replaces the process without running destructors: write what is buffered first.
// The new program loads the tracer again (LD_PRELOAD is inherited) into a file of its own.
static void before_exec(const char* path) {
  RecordingGuard guard;
  const int saved_errno = errno;
  flush_before_exec(path);
  errno = saved_errno;
}

MEMSTAGE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  resolve();
  before_exec(path);
  return real.execve(path, argv, envp);
}

MEMSTAGE_EXPORT int execv(const char* path, char* const argv[]) {
  return execve(path, argv, environ);
}

MEMSTAGE_EXPORT int execvp(const char* file, char* const argv[]) {
  resolve();
  before_exec(file);
  return real.execvp(file, argv);
}

MEMSTAGE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  resolve();
  before_exec(file);
  return real.execvpe(file, argv, envp);
}

MEMSTAGE_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  resolve();
  before_exec(nullptr);
  return real.fexecve(fd, argv, envp);
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
  exit_without_atexit(real.exit_now, status);
}

MEMSTAGE_EXPORT void _Exit(int status) {
  resolve();
  exit_without_atexit(real.exit_now_c99, status);
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
  const int r = resolve() ? real.pipe2(fds, flags) : static_cast<int>(syscall(SYS_pipe2, fds, flags));
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
  const ssize_t result = resolve() ? real.read(fd, buffer, bytes) : syscall(SYS_read, fd, buffer, bytes);
  after_wait(wait_started_ns);
  return result;
}

MEMSTAGE_EXPORT ssize_t write(int fd, const void* buffer, size_t bytes) {
  if (t_thread.in_tracer && unwind_pipe_end(fd) == PipeEnd::kLost) {
    errno = EBADF;
    return -1;
  }
  return resolve() && real.write ? real.write(fd, buffer, bytes) : syscall(SYS_write, fd, buffer, bytes);
}

MEMSTAGE_EXPORT int close(int fd) {
  if (t_thread.in_tracer && release_unwind_pipe_end(fd)) return 0;
  return resolve() ? real.close(fd) : static_cast<int>(syscall(SYS_close, fd));
}

// A program with one thread is left with one: the tracer's writer thread is made only
// when the program makes its second (writer.h), here, before it. The writer's own
// creation passes straight through.
MEMSTAGE_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*start)(void*),
                                   void* argument) {
  if (!resolve() || !real.pthread_create) return EAGAIN;
  if (!t_thread.in_tracer) before_second_thread();
  return real.pthread_create(thread, attributes, start, argument);
}

// Waits: where a program with one thread, which has no writer thread, has what it
// recorded written and its memory sampled before it blocks, and the time it woke noted
// (tracer.h, before_wait). A wait that cannot block (a zero timeout, WNOHANG) is no wait.
// Each passes the call on unchanged.
namespace memstage::preload {
namespace {
// Zero (kNoWait) for a zero timeout, kUnknownWait for none.
uint64_t wait_of(const timespec* t) {
  return t ? static_cast<uint64_t>(t->tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t->tv_nsec) : kUnknownWait;
}
uint64_t wait_of_ms(int timeout_ms) {
  return timeout_ms < 0 ? kUnknownWait : static_cast<uint64_t>(timeout_ms) * 1'000'000ull;
}
template <typename F>
F real_or_nothing(F f) {
  return resolve() ? f : nullptr;
}
}  // namespace
}  // namespace memstage::preload

// The wait `wait_ns` (kNoWait: the call cannot block), then the call itself.
#define MEMSTAGE_WAIT(wait_ns, name, ...)            \
  const uint64_t wait_started_ns = before_wait(wait_ns); \
  auto* f = real_or_nothing(real.name);              \
  if (!f) {                                          \
    errno = ENOSYS;                                  \
    return -1;                                       \
  }                                                  \
  const auto result = f(__VA_ARGS__);                \
  after_wait(wait_started_ns);                       \
  return result

namespace memstage::preload {
namespace {
uint64_t clock_now_ns(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return wait_of(&now);
}
// Whether a sleep of `request` is taken in slices (tracer.h, sleep_sliced): a valid
// request on a clock that measures time passing, at least a sampling interval long.
bool slice_sleep(clockid_t clock, const timespec* request) {
  return request && request->tv_sec >= 0 && request->tv_nsec >= 0 && request->tv_nsec < 1'000'000'000 &&
         (clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME || clock == CLOCK_BOOTTIME) &&
         sleeps_sliced() &&
         wait_of(request) >= g_tracer.options.sample_interval_ms * 1'000'000ull;
}
// A relative sleep, sliced: 0, or the error number (EINTR: `remaining` says what is left).
int sleep_relative_sliced(clockid_t clock, const timespec* request, timespec* remaining) {
  const uint64_t deadline_ns = clock_now_ns(clock) + wait_of(request);
  const uint64_t wait_started_ns = before_wait(wait_of(request));
  const int error = sleep_sliced(clock, deadline_ns);
  after_wait(wait_started_ns);
  if (error == EINTR && remaining) {
    const uint64_t now_ns = clock_now_ns(clock);
    const uint64_t left_ns = deadline_ns > now_ns ? deadline_ns - now_ns : 0;
    *remaining = timespec{static_cast<time_t>(left_ns / 1'000'000'000ull), static_cast<long>(left_ns % 1'000'000'000ull)};
  }
  return error;
}
}  // namespace
}  // namespace memstage::preload

// Sleeps of a sampling interval or more, while there is no writer thread, are taken in
// slices with the writer's round between them (tracer.h, sleep_sliced); they end when they
// would have, and a signal's handler interrupts them as it would have.
MEMSTAGE_EXPORT int nanosleep(const timespec* request, timespec* remaining) {
  if (slice_sleep(CLOCK_MONOTONIC, request)) {
    const int error = sleep_relative_sliced(CLOCK_MONOTONIC, request, remaining);
    if (error == 0) return 0;
    errno = error;
    return -1;
  }
  MEMSTAGE_WAIT(wait_of(request), nanosleep, request, remaining);
}

MEMSTAGE_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* request, timespec* remaining) {
  uint64_t wait_ns = wait_of(request);
  if (request && (flags & TIMER_ABSTIME)) {
    const uint64_t now_ns = clock_now_ns(clock);
    wait_ns = wait_ns > now_ns ? wait_ns - now_ns : 0;
  }
  const timespec wait{static_cast<time_t>(wait_ns / 1'000'000'000ull), static_cast<long>(wait_ns % 1'000'000'000ull)};
  if (slice_sleep(clock, request ? &wait : nullptr)) {
    if (!(flags & TIMER_ABSTIME)) return sleep_relative_sliced(clock, request, remaining);
    const uint64_t wait_started_ns = before_wait(wait_ns);
    const int error = sleep_sliced(clock, wait_of(request));
    after_wait(wait_started_ns);
    return error;
  }
  const uint64_t wait_started_ns = before_wait(wait_ns);
  auto* f = real_or_nothing(real.clock_nanosleep);
  const int result = f ? f(clock, flags, request, remaining) : ENOSYS;  // returns the error
  after_wait(wait_started_ns);
  return result;
}

MEMSTAGE_EXPORT unsigned sleep(unsigned seconds) {
  const timespec request{static_cast<time_t>(seconds), 0};
  if (slice_sleep(CLOCK_MONOTONIC, &request)) {
    timespec remaining{};
    if (sleep_relative_sliced(CLOCK_MONOTONIC, &request, &remaining) == 0) return 0;
    // As the C library's: what is left, in whole seconds rounded.
    return static_cast<unsigned>(remaining.tv_sec) + (remaining.tv_nsec >= 500'000'000 ? 1 : 0);
  }
  const uint64_t wait_started_ns = before_wait(seconds * 1'000'000'000ull);
  auto* f = real_or_nothing(real.sleep);
  const unsigned left = f ? f(seconds) : seconds;
  after_wait(wait_started_ns);
  return left;
}

MEMSTAGE_EXPORT int usleep(useconds_t microseconds) {
  const timespec request{static_cast<time_t>(microseconds / 1'000'000), static_cast<long>(microseconds % 1'000'000) * 1000};
  if (slice_sleep(CLOCK_MONOTONIC, &request)) {
    const int error = sleep_relative_sliced(CLOCK_MONOTONIC, &request, nullptr);
    if (error == 0) return 0;
    errno = error;
    return -1;
  }
  MEMSTAGE_WAIT(microseconds * 1000ull, usleep, microseconds);
}

MEMSTAGE_EXPORT int poll(pollfd* fds, nfds_t count, int timeout_ms) {
  MEMSTAGE_WAIT(wait_of_ms(timeout_ms), poll, fds, count, timeout_ms);
}

MEMSTAGE_EXPORT int ppoll(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask) {
  MEMSTAGE_WAIT(wait_of(timeout), ppoll, fds, count, timeout, mask);
}

MEMSTAGE_EXPORT int select(int count, fd_set* read, fd_set* write, fd_set* except, timeval* timeout) {
  const uint64_t wait_ns = timeout ? static_cast<uint64_t>(timeout->tv_sec) * 1'000'000'000ull +
                                         static_cast<uint64_t>(timeout->tv_usec) * 1000ull
                                   : kUnknownWait;
  MEMSTAGE_WAIT(wait_ns, select, count, read, write, except, timeout);
}

MEMSTAGE_EXPORT int pselect(int count, fd_set* read, fd_set* write, fd_set* except, const timespec* timeout,
                            const sigset_t* mask) {
  MEMSTAGE_WAIT(wait_of(timeout), pselect, count, read, write, except, timeout, mask);
}

MEMSTAGE_EXPORT int epoll_wait(int epoll, epoll_event* events, int count, int timeout_ms) {
  MEMSTAGE_WAIT(wait_of_ms(timeout_ms), epoll_wait, epoll, events, count, timeout_ms);
}

MEMSTAGE_EXPORT int epoll_pwait(int epoll, epoll_event* events, int count, int timeout_ms, const sigset_t* mask) {
  MEMSTAGE_WAIT(wait_of_ms(timeout_ms), epoll_pwait, epoll, events, count, timeout_ms, mask);
}

MEMSTAGE_EXPORT pid_t wait(int* status) {
  MEMSTAGE_WAIT(kUnknownWait, wait, status);
}

MEMSTAGE_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  MEMSTAGE_WAIT(options & WNOHANG ? kNoWait : kUnknownWait, waitpid, pid, status, options);
}

MEMSTAGE_EXPORT pid_t wait4(pid_t pid, int* status, int options, rusage* usage) {
  MEMSTAGE_WAIT(options & WNOHANG ? kNoWait : kUnknownWait, wait4, pid, status, options, usage);
}

MEMSTAGE_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  MEMSTAGE_WAIT(options & WNOHANG ? kNoWait : kUnknownWait, waitid, type, id, info, options);
}

MEMSTAGE_EXPORT int pause() {
  MEMSTAGE_WAIT(kUnknownWait, pause);
}

MEMSTAGE_EXPORT int sigsuspend(const sigset_t* mask) {
  MEMSTAGE_WAIT(kUnknownWait, sigsuspend, mask);
}

// Reads from sockets may block as long as the peer likes (Chromium's zygote waits for its
// commands in recvmsg).
MEMSTAGE_EXPORT ssize_t recv(int socket, void* buffer, size_t bytes, int flags) {
  MEMSTAGE_WAIT(flags & MSG_DONTWAIT ? kNoWait : kUnknownWait, recv, socket, buffer, bytes, flags);
}

MEMSTAGE_EXPORT ssize_t recvfrom(int socket, void* buffer, size_t bytes, int flags, sockaddr* from,
                                 socklen_t* from_length) {
  MEMSTAGE_WAIT(flags & MSG_DONTWAIT ? kNoWait : kUnknownWait, recvfrom, socket, buffer, bytes, flags, from, from_length);
}

MEMSTAGE_EXPORT ssize_t recvmsg(int socket, msghdr* message, int flags) {
  MEMSTAGE_WAIT(flags & MSG_DONTWAIT ? kNoWait : kUnknownWait, recvmsg, socket, message, flags);
}

MEMSTAGE_EXPORT int accept(int socket, sockaddr* address, socklen_t* address_length) {
  MEMSTAGE_WAIT(kUnknownWait, accept, socket, address, address_length);
}

MEMSTAGE_EXPORT int accept4(int socket, sockaddr* address, socklen_t* address_length, int flags) {
  MEMSTAGE_WAIT(kUnknownWait, accept4, socket, address, address_length, flags);
}

#undef MEMSTAGE_WAIT

MEMSTAGE_EXPORT void memstage_tracer_stage_begin(const char* name) {
  if (!should_record()) return;
  RecordingGuard guard;
  const int saved_errno = errno;
  record_stage_begin(name);
  errno = saved_errno;
}

MEMSTAGE_EXPORT void memstage_tracer_stage_end(void) {
  if (!should_record()) return;
  RecordingGuard guard;
  const int saved_errno = errno;
  record_stage_end();
  errno = saved_errno;
}

// Everything recorded so far into the trace, for a report read while the program runs
// (the notebook magic's, after each cell).
MEMSTAGE_EXPORT void memstage_tracer_flush(void) {
  if (!should_record()) return;
  RecordingGuard guard;
  const int saved_errno = errno;
  flush_trace();
  errno = saved_errno;
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
  const int saved_errno = errno;
  record_device_cache(reserved_bytes, allocated_bytes);
  errno = saved_errno;
}

// Called by the sitecustomize.py that `memstage run` puts on PYTHONPATH, with the GIL
// held, at startup and first thing in each new thread (python_frames.h).
MEMSTAGE_EXPORT int memstage_python_attach(int skip_frames) {
  python_bootstrap_attached();  // what the bootstrap did up to here was the tracer's
  if (!should_record()) return 0;
  const int saved_errno = errno;
  const int attached = python_attach(skip_frames);
  errno = saved_errno;
  return attached;
}
