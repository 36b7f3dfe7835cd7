// What the interposed functions forward to: the real functions (hooked_functions.h's
// list), looked up on the first call; the bootstrap arena that serves the allocations
// made before that lookup ends; what is known of the allocator (glibc's or another) and
// of the dynamic loader's code. Depends on nothing else of the tracer's: the interposers
// (interpose*.cpp, got_hooks.cpp) and the recorder (tracer.h, recording_core.cpp) both call it.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "profiler/preload/hooked_functions.h"

namespace memstage::preload {

#define MEMSTAGE_REAL_FIELD(field, symbol, attach, result, parameters) result(*field) parameters;
#define MEMSTAGE_NO_FIELD(symbol, attach)
struct RealFunctions {
  MEMSTAGE_HOOKED_FUNCTIONS(MEMSTAGE_REAL_FIELD, MEMSTAGE_NO_FIELD)
};
#undef MEMSTAGE_REAL_FIELD
#undef MEMSTAGE_NO_FIELD
// Hidden: the malloc family's fast path loads a pointer at a fixed offset from its code.
extern RealFunctions g_real __attribute__((visibility("hidden")));

// 0: not resolved, 1: the lookup running (dlsym may allocate: served from the bootstrap
// arena), 2: resolved.
extern std::atomic<int> g_resolve_state __attribute__((visibility("hidden")));
// Looks the real functions up after this library's (RTLD_NEXT); false while the lookup runs.
bool resolve_slow();
inline bool resolve() {
  return __builtin_expect(g_resolve_state.load(std::memory_order_acquire) == 2, 1) || resolve_slow();
}
// Attaching (got_hooks.cpp): the functions the tracer forwards to become those the
// program's own lookups find (its allocator, not necessarily libc's).
void resolve_from_program();

// Serves allocations made before the real allocator is known. Blocks are never reused;
// freeing one is a no-op, recognised by its address.
inline constexpr size_t kBootstrapBytes = 1u << 20;
extern uint8_t g_bootstrap_arena[kBootstrapBytes] __attribute__((visibility("hidden")));
inline bool is_bootstrap(const void* p) {
  // One compare: below the arena wraps around to far above it.
  return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_bootstrap_arena) < kBootstrapBytes;
}
// nullptr and ENOMEM once the arena is used up.
void* bootstrap_alloc(size_t size, size_t alignment);
inline size_t bootstrap_size(const void* p) { return static_cast<const size_t*>(p)[-1]; }

// Whether the allocator is glibc's, whose blocks' usable sizes are read inline (its
// malloc_usable_size is libc's).
extern bool g_glibc_allocator __attribute__((visibility("hidden")));
inline bool glibc_allocator() { return g_glibc_allocator; }
// The allocator's malloc_usable_size; 0 for nullptr or before the lookup. Inline: the
// fast path of stats and sample modes calls it for an allocator other than glibc's.
inline size_t real_usable_size(void* p) { return g_real.malloc_usable_size && p ? g_real.malloc_usable_size(p) : 0; }
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
// The usable size of a live block (one just allocated, or one the program is about to
// free or realloc), read without touching more than the allocator itself will: glibc's
// size word inline, another allocator's malloc_usable_size. Inline: the counted paths
// of stats and sample modes (tracer.h) call it on every call they count.
inline size_t live_block_usable_size(void* p) {
  return g_glibc_allocator ? glibc_usable_size(p) : real_usable_size(p);
}

// The dynamic loader's code (ld.so), found with the real functions. Its own allocations
// (TLS vectors, link maps) are made while it holds its data half-updated: unwinding then
// touches libunwind's thread-local data, re-enters the loader and crashes the program.
// They are the loader's bookkeeping, left untraced.
extern uint64_t g_loader_text_start __attribute__((visibility("hidden")));
extern uint64_t g_loader_text_bytes __attribute__((visibility("hidden")));
inline bool called_from_loader(const void* return_address) {
  // One compare: below the start wraps around to far above the size.
  return reinterpret_cast<uint64_t>(return_address) - g_loader_text_start < g_loader_text_bytes;
}

}  // namespace memstage::preload
