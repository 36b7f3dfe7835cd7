// The writer's two raw chunk buffers, kept in a MAP_SHARED mapping of `<trace>.pending`
// (profiler/trace/pending_chunks.h): what the writer encoded and has not written yet
// outlives a SIGKILL in the page cache, and `memstage run` or `memstage report` appends it
// to the trace after the death. The writer tells it, under its lock (the compressor, of
// the chunk it wrote), how far each buffer is filled and which chunks are written.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memstage::preload {

// Maps the two buffers of `buffer_bytes` each from the pending file of the trace at
// `trace_path` (the trace `trace_bytes` long so far): the first buffer's start, the second
// right after it, or nullptr (the writer then keeps buffers of its own: a kill loses them).
// Called again (a fork's child, a new trace), it maps the new file at the same place.
// The writer then says which buffer it fills first (pending_next_chunk).
uint8_t* pending_open(const char* trace_path, size_t buffer_bytes, uint64_t trace_bytes);
// `raw` is empty and fills with the next chunk from now on: the count the writer stores
// the bytes of whole records in it into after each record (release), a store of its own
// where no file backs the buffers: an inline store per record, not a call (docs/performance.md).
std::atomic<uint64_t>* pending_next_chunk(const uint8_t* raw);
// The chunk in `raw` was written whole: the trace is now `trace_bytes` long.
void pending_written(const uint8_t* raw, uint64_t trace_bytes);
// In a fork's child, before anything is written: the parent's file is no longer written
// from here (the mapping stays, private).
void pending_after_fork_child();
// The trace was completed: nothing is pending, the file goes.
void pending_close();

}  // namespace memstage::preload
