// What the interposed functions call: the recording paths (record_paths.cpp, tracer.cpp)
// and the re-entry guard (its thread locals are the recording core's, recording_core.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "profiler/preload/keep_errno.h"
#include "profiler/preload/options.h"
#include "profiler/trace/trace_format.h"

struct sigaction;

namespace memstage::preload {

struct ThreadState;  // recording_core.h

// The tracer's words of each thread, side by side: the malloc family's fast path finds both
// from one lookup of their offset.
struct ThreadLocals {
  // The thread's state (recording_core.h, current_thread_state), once it has one.
  ThreadState* state;
  // Set while the tracer itself runs on this thread (and always on the writer thread):
  // allocations made then are the tracer's or the allocator's, never recorded.
  bool in_tracer;
  // A signal that ends the process, caught while this thread was inside the tracer (its
  // ring mid-push, the writer's lock held): raised again as the thread leaves the tracer,
  // so that the trace is completed whole first (tracer.cpp, on_fatal_signal).
  int deferred_signal;
};
extern __thread ThreadLocals t_thread __attribute__((tls_model("initial-exec")));

// Raises the deferred signal (recording_core.cpp).
void raise_deferred_signal();
// Leaves the tracer on this thread (in_tracer back to `was`), raising a signal deferred inside it.
inline void leave_tracer(bool was) {
  t_thread.in_tracer = was;
  if (!was && __builtin_expect(t_thread.deferred_signal != 0, 0)) raise_deferred_signal();
}

class RecordingGuard {
 public:
  RecordingGuard() : was_(t_thread.in_tracer) { t_thread.in_tracer = true; }
  ~RecordingGuard() { leave_tracer(was_); }
  RecordingGuard(const RecordingGuard&) = delete;
  RecordingGuard& operator=(const RecordingGuard&) = delete;

 private:
  bool was_;
};

// Starts recording with the options of the environment (`memstage run`), or with these
// (`memstage attach`, got_hooks.cpp).
void start_tracer();
// `writer_thread_now`: start the writer thread at once (attaching: the program already
// runs its threads), not when the program makes its second one (writer.h).
void start_tracer_with(const Options& options, bool writer_thread_now);
void finish_trace();
// Puts back the default action of the fatal signals the tracer handles (detach).
void remove_signal_handlers();
// The program's sigaction (interpose.cpp): the tracer's handlers of the signals that end
// the process stand in for the default action and look like it.
int program_sigaction(int signo, const struct sigaction* action, struct sigaction* old);
// exec is about to replace the process with `path` (nullptr: fexecve): records it and
// writes what is buffered.
void flush_before_exec(const char* path);
// Writes everything recorded so far (memstage_tracer_flush: a notebook cell's report).
void flush_trace();

// An allocation's call and the alignment it asked (0 or 1: none), as push_event and the
// trace carry them: trace::AllocCall | ceil(log2(alignment)) << 8.
inline uint16_t alloc_call_bits(trace::AllocCall call, size_t alignment = 0) {
  const unsigned align_log2 = alignment <= 1 ? 0 : 64 - __builtin_clzll(alignment - 1);
  return static_cast<uint16_t>(static_cast<unsigned>(call) | align_log2 << 8);
}

// With the guard set, after the allocator returned p (or before it frees it). `call`:
// alloc_call_bits; from realloc (the allocation half of a successful one) when its call is
// AllocCall::kRealloc and `from_realloc`.
void record_alloc(void* p, size_t size, uint16_t call, bool from_realloc = false);
// False where the free is left out: a forked child's free of a block it inherited.
bool record_free(void* p);
// `reserved`: address space only (PROT_NONE or MAP_NORESERVE), not memory.
void record_mmap(void* p, size_t length, bool reserved);
void record_mprotect(void* p, size_t length, bool accessible);
void record_munmap(void* p, size_t length);
void record_mremap(void* old_address, size_t old_length, void* new_address, size_t new_length);
void record_modules_changed();
void record_deep_bind_removed(const char* file);
// Device memory (interpose_cuda.cpp): `address` is a device pointer, or for kPhysical the
// allocation handle.
void record_device_alloc(uint64_t address, uint64_t bytes, trace::DeviceMemory kind);
void record_device_free(uint64_t address, trace::DeviceMemory kind);
// A caching allocator's reserved and allocated bytes (memstage_tracer_device_cache).
void record_device_cache(uint64_t reserved_bytes, uint64_t allocated_bytes);
void record_stage_begin(const char* name);
void record_stage_end();

}  // namespace memstage::preload
