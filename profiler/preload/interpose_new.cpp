// C++ operator new and delete. jemalloc, tcmalloc and mimalloc define their own, which
// take memory without calling malloc, so the tracer must stand in front of these too.
// Each forwards to the next definition (the allocator's or libstdc++'s) and records
// the result. Names are the mangled ones: this file declares no C++ operators.
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "profiler/preload/recording.h"
#include "profiler/preload/tracer.h"

#define MEMSTAGE_EXPORT extern "C" __attribute__((visibility("default")))

namespace memstage::preload {
namespace {

using trace::AllocCall;

using NewFn = void* (*)(size_t);
using NewAlignedFn = void* (*)(size_t, size_t);
using NewNothrowFn = void* (*)(size_t, const void*);
using NewAlignedNothrowFn = void* (*)(size_t, size_t, const void*);
using DeleteFn = void (*)(void*);

// The definition of `name` after ours. A C++ runtime that was loaded with RTLD_LOCAL (as
// the dependency of a Python extension module: Python loads those RTLD_LOCAL, and python3
// itself has no libstdc++) is outside the global scope RTLD_NEXT searches, but it is
// loaded by the time its code calls operator new: ask it by name.
void* find_definition(const char* name) {
  if (void* f = dlsym(RTLD_NEXT, name)) return f;
  for (const char* runtime : {"libstdc++.so.6", "libc++.so.1"}) {
    if (void* handle = dlopen(runtime, RTLD_LAZY | RTLD_NOLOAD)) {
      void* f = dlsym(handle, name);
      dlclose(handle);
      if (f) return f;
    }
  }
  return nullptr;
}

// The definition after ours of one operator, looked up on first use.
struct NextDefinition {
  std::atomic<void*> function{nullptr};
  // Defined by a C++ runtime (libstdc++, libc++), whose operators take memory from malloc
  // and give it back to free; an allocator's own (jemalloc's, tcmalloc's) do not.
  std::atomic<bool> via_malloc{false};
};

bool defined_by_cpp_runtime(void* f) {
  Dl_info info;
  if (!f || !dladdr(f, &info) || !info.dli_fname) return false;
  return strstr(info.dli_fname, "/libstdc++.so") || strstr(info.dli_fname, "/libc++.so");
}

// The next definition of `name`, looked up on first use (by then dlsym works: operator
// new is never the first call) and kept in `next`; nullptr while none can be found. No
// function-local statics: their guards would pull libstdc++'s exception support, and
// its allocations, into the tracer.
__attribute__((noinline)) void* look_up(NextDefinition& next, const char* name) {
  // The lookup's own blocks are the tracer's: the loader allocates some that libc frees,
  // and a free counted without its allocation would lower stats and sample modes' heap.
  RecordingGuard guard;
  void* f = find_definition(name);
  next.via_malloc.store(defined_by_cpp_runtime(f), std::memory_order_relaxed);
  next.function.store(f, std::memory_order_release);
  return f;
}

template <typename F>
inline F next(NextDefinition& next, const char* name) {
  void* f = next.function.load(std::memory_order_acquire);
  if (__builtin_expect(!f, 0)) f = look_up(next, name);
  return reinterpret_cast<F>(f);
}

// Stats and sample modes count at malloc and free (interpose.cpp's lean path). A C++
// runtime's operators go through those, so forwarding to them unrecorded counts each
// block once, at the cost of a jump instead of a guarded call and a second pass through
// the tracer. (Their new(0) takes 1 byte of malloc, and is counted as 1 byte.) In the
// other modes, or in front of an allocator's own operators, the operator is recorded here.
inline bool counted_by_malloc(const NextDefinition& next) {
  return recording_counted() && next.via_malloc.load(std::memory_order_relaxed) && !t_thread.in_tracer;
}

// Passed to the nothrow forms, which only look at its type: std::nothrow_t is empty.
const char g_nothrow_tag = 0;
const void* nothrow_tag() { return &g_nothrow_tag; }

// Where no C++ runtime defines a form (none is loaded in a scope the tracer can see),
// the memory comes from malloc, which is what libstdc++'s operator new does too; the
// allocation is then recorded as the malloc it is. There is no new_handler to call
// and no exception to throw from the tracer: out of memory there ends the program.
void* fallback_new(size_t size, size_t alignment, bool nothrow) {
  void* p = nullptr;
  if (alignment <= alignof(max_align_t)) {
    p = malloc(size ? size : 1);
  } else if (posix_memalign(&p, alignment, size ? size : 1) != 0) {
    p = nullptr;
  }
  if (!p && !nothrow) abort();
  return p;
}

inline bool recording_now() { return !t_thread.in_tracer && recording(); }

// Inlined: one frame fewer for the unwinder to step through on every traced allocation.
// `call`: kNew or kNewArray, asked for `alignment` (0: none).
__attribute__((always_inline)) inline void record_new(void* p, size_t size, AllocCall call, size_t alignment) {
  if (!p) return;
  KeepErrno keep;
  record_alloc(p, size, alloc_call_bits(call, alignment));
}

// The throwing forms: tried as nothrow under the guard (no exception can pass through the
// tracer's frames); on failure the real throwing form runs unguarded and does what it
// does (new_handler, std::bad_alloc), its memory then seen through malloc if at all.
void* traced_new(NewFn throwing, NewNothrowFn nothrow, size_t size, AllocCall call) {
  if (!throwing) return fallback_new(size, 0, false);
  if (!recording_now() || !nothrow) return throwing(size);
  void* p;
  {
    RecordingGuard guard;
    p = nothrow(size, nothrow_tag());
    record_new(p, size, call, 0);
  }
  return p ? p : throwing(size);
}

void* traced_new_aligned(NewAlignedFn throwing, NewAlignedNothrowFn nothrow, size_t size, size_t alignment,
                         AllocCall call) {
  if (!throwing) return fallback_new(size, alignment, false);
  if (!recording_now() || !nothrow) return throwing(size, alignment);
  void* p;
  {
    RecordingGuard guard;
    p = nothrow(size, alignment, nothrow_tag());
    record_new(p, size, call, alignment);
  }
  return p ? p : throwing(size, alignment);
}

void* traced_new_nothrow(NewNothrowFn nothrow, size_t size, const void* tag, AllocCall call) {
  if (!nothrow) return fallback_new(size, 0, true);
  if (!recording_now()) return nothrow(size, tag);
  RecordingGuard guard;
  void* p = nothrow(size, tag);
  record_new(p, size, call, 0);
  return p;
}

void* traced_new_aligned_nothrow(NewAlignedNothrowFn nothrow, size_t size, size_t alignment, const void* tag,
                                 AllocCall call) {
  if (!nothrow) return fallback_new(size, alignment, true);
  if (!recording_now()) return nothrow(size, alignment, tag);
  RecordingGuard guard;
  void* p = nothrow(size, alignment, tag);
  record_new(p, size, call, alignment);
  return p;
}

// Every delete form ends here: recorded before the memory goes back (the address may be
// reused at once by another thread), then handed to the real form.
template <typename Forward>
void traced_delete(void* p, Forward forward) {
  if (!p || !recording_now()) return forward();
  RecordingGuard guard;
  {
    KeepErrno keep;
    record_free(p);
  }
  forward();
}

}  // namespace
}  // namespace memstage::preload

using namespace memstage::preload;

MEMSTAGE_EXPORT void* _Znwm(size_t size) {
  static NextDefinition real_next;
  const auto real = next<NewFn>(real_next, "_Znwm");
  if (counted_by_malloc(real_next)) return real(size);
  static NextDefinition real_nothrow_next;
  const auto real_nothrow = next<NewNothrowFn>(real_nothrow_next, "_ZnwmRKSt9nothrow_t");
  return traced_new(real, real_nothrow, size, AllocCall::kNew);
}
MEMSTAGE_EXPORT void* _Znam(size_t size) {
  static NextDefinition real_next;
  const auto real = next<NewFn>(real_next, "_Znam");
  if (counted_by_malloc(real_next)) return real(size);
  static NextDefinition real_nothrow_next;
  const auto real_nothrow = next<NewNothrowFn>(real_nothrow_next, "_ZnamRKSt9nothrow_t");
  return traced_new(real, real_nothrow, size, AllocCall::kNewArray);
}
MEMSTAGE_EXPORT void* _ZnwmRKSt9nothrow_t(size_t size, const void* tag) {
  static NextDefinition real_next;
  const auto real = next<NewNothrowFn>(real_next, "_ZnwmRKSt9nothrow_t");
  if (counted_by_malloc(real_next)) return real(size, tag);
  return traced_new_nothrow(real, size, tag, AllocCall::kNew);
}
MEMSTAGE_EXPORT void* _ZnamRKSt9nothrow_t(size_t size, const void* tag) {
  static NextDefinition real_next;
  const auto real = next<NewNothrowFn>(real_next, "_ZnamRKSt9nothrow_t");
  if (counted_by_malloc(real_next)) return real(size, tag);
  return traced_new_nothrow(real, size, tag, AllocCall::kNewArray);
}
MEMSTAGE_EXPORT void* _ZnwmSt11align_val_t(size_t size, size_t alignment) {
  static NextDefinition real_next;
  const auto real = next<NewAlignedFn>(real_next, "_ZnwmSt11align_val_t");
  if (counted_by_malloc(real_next)) return real(size, alignment);
  static NextDefinition real_nothrow_next;
  const auto real_nothrow = next<NewAlignedNothrowFn>(real_nothrow_next, "_ZnwmSt11align_val_tRKSt9nothrow_t");
  return traced_new_aligned(real, real_nothrow, size, alignment, AllocCall::kNew);
}
MEMSTAGE_EXPORT void* _ZnamSt11align_val_t(size_t size, size_t alignment) {
  static NextDefinition real_next;
  const auto real = next<NewAlignedFn>(real_next, "_ZnamSt11align_val_t");
  if (counted_by_malloc(real_next)) return real(size, alignment);
  static NextDefinition real_nothrow_next;
  const auto real_nothrow = next<NewAlignedNothrowFn>(real_nothrow_next, "_ZnamSt11align_val_tRKSt9nothrow_t");
  return traced_new_aligned(real, real_nothrow, size, alignment, AllocCall::kNewArray);
}
MEMSTAGE_EXPORT void* _ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment, const void* tag) {
  static NextDefinition real_next;
  const auto real = next<NewAlignedNothrowFn>(real_next, "_ZnwmSt11align_val_tRKSt9nothrow_t");
  if (counted_by_malloc(real_next)) return real(size, alignment, tag);
  return traced_new_aligned_nothrow(real, size, alignment, tag, AllocCall::kNew);
}
MEMSTAGE_EXPORT void* _ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment, const void* tag) {
  static NextDefinition real_next;
  const auto real = next<NewAlignedNothrowFn>(real_next, "_ZnamSt11align_val_tRKSt9nothrow_t");
  if (counted_by_malloc(real_next)) return real(size, alignment, tag);
  return traced_new_aligned_nothrow(real, size, alignment, tag, AllocCall::kNewArray);
}

// delete, delete[]: plain, sized, aligned, sized and aligned, nothrow.
#define DELETE_FORM(symbol, params, args)                                  \
  MEMSTAGE_EXPORT void symbol params {                                     \
    using Fn = void(*) params;                                             \
    static NextDefinition next_definition;                                 \
    const Fn real = next<Fn>(next_definition, #symbol);                    \
    if (counted_by_malloc(next_definition)) return real args;              \
    traced_delete(p, [&] { real ? real args : free(p); });                  \
  }

DELETE_FORM(_ZdlPv, (void* p), (p))
DELETE_FORM(_ZdaPv, (void* p), (p))
DELETE_FORM(_ZdlPvm, (void* p, size_t size), (p, size))
DELETE_FORM(_ZdaPvm, (void* p, size_t size), (p, size))
DELETE_FORM(_ZdlPvSt11align_val_t, (void* p, size_t alignment), (p, alignment))
DELETE_FORM(_ZdaPvSt11align_val_t, (void* p, size_t alignment), (p, alignment))
DELETE_FORM(_ZdlPvmSt11align_val_t, (void* p, size_t size, size_t alignment), (p, size, alignment))
DELETE_FORM(_ZdaPvmSt11align_val_t, (void* p, size_t size, size_t alignment), (p, size, alignment))
DELETE_FORM(_ZdlPvRKSt9nothrow_t, (void* p, const void* tag), (p, tag))
DELETE_FORM(_ZdaPvRKSt9nothrow_t, (void* p, const void* tag), (p, tag))
DELETE_FORM(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void* p, size_t alignment, const void* tag), (p, alignment, tag))
DELETE_FORM(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void* p, size_t alignment, const void* tag), (p, alignment, tag))
