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
// Zeroed pages in place of the whole pages at `address` (the tracer's own, as a static page
// of its library); false on failure.
bool tracer_map_at(void* address, size_t bytes);
// Bytes of the tracer's memory that are resident: small mappings whole, large ones
// (rings, tables, buffers: mostly untouched address space) page by page (mincore).
uint64_t tracer_resident_bytes();

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
