// The tracer's own memory: mapped straight from the kernel, never from the traced
// program's allocator, so it never shows up as the program's heap. Every byte mapped
// here is counted and reported as the tracer's share of RSS.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memstage::preload {

// Zeroed pages; nullptr on failure. Never calls malloc.
void* tracer_map(size_t bytes);
void tracer_unmap(void* p, size_t bytes);
// A tracer_map'd block of `old_bytes` grown to `new_bytes`, its pages moved by the kernel
// (not copied: no second copy resident while it grows), the new ones zeroed; it may move.
// nullptr on failure, the block left as it was.
void* tracer_remap(void* p, size_t old_bytes, size_t new_bytes);
// Zeroed pages for a large table that fills as it is used: 2 MiB aligned and rounded up to
// whole 2 MiB, in transparent huge pages past its first `small_bytes` (rounded up to 2 MiB).
// A fresh 4 KiB page costs a fault and a TLB entry; a 2 MiB page one of
// each for 512 of them. The 4 KiB start keeps a small program's tracer small: a huge page
// is resident whole once touched. Unmapped with tracer_unmap_huge and the same `bytes`.
inline constexpr size_t kHugePageBytes = 2u << 20;
void* tracer_map_huge(size_t bytes, size_t small_bytes);
void tracer_unmap_huge(void* p, size_t bytes);
// A hash table's memory, which a table touches all over as soon as it has it (it is
// rebuilt whole at each growth): in 2 MiB pages from 2 MiB up, 4 KiB pages below, made
// resident at once (one call, not a fault a page).
// Unmapped with tracer_unmap_table and the same `bytes`.
void* tracer_map_table(size_t bytes);
void tracer_unmap_table(void* p, size_t bytes);
// The bytes tracer_map_table(bytes) maps (all of which its 2 MiB pages make resident).
size_t tracer_table_mapped_bytes(size_t bytes);
// Zeroed pages in place of the whole pages at `address` (the tracer's own, as a static page
// of its library); false on failure.
bool tracer_map_at(void* address, size_t bytes);
// A MAP_SHARED mapping of the first `bytes` of file `fd`, counted as the tracer's; with
// `address`, in place of the mapping there (counted already), else anywhere. Or, fd < 0,
// zeroed private pages in place of that mapping. nullptr on failure.
void* tracer_map_shared_file(int fd, size_t bytes, void* address);
// Bytes of the tracer's memory that are resident: small mappings whole, large ones
// (rings, tables, buffers: mostly untouched address space) page by page (mincore), but
// those last found wholly resident or settled.
uint64_t tracer_resident_bytes();
// The large mapping at `p` (its start) is written no more: it stays mapped, emptied, for
// lock-free lookups that may still read it. Its resident bytes are asked once, now, and
// stand (reads map no page of the tracer's own).
void tracer_settled(void* p);

// Starts fetching the cache line at `p` (a hash table's slot looked up soon), so that
// several such misses overlap. An asm statement: GCC 12 drops some __builtin_prefetch
// calls as dead code once inlined (the writer's were gone from its drain loop).
inline void prefetch_line(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// A bump allocator over tracer_map'd blocks for data that lives as long as the process
// (stack return addresses, stage names). Not thread-safe: callers hold their own lock.
class BumpArena {
 public:
  void* allocate(size_t bytes, size_t align = 8);

 private:
  static constexpr size_t kBlockBytes = 1 << 20;
  uint8_t* cursor_ = nullptr;
  uint8_t* end_ = nullptr;
};

}  // namespace memstage::preload
