// The process's samples, pushed as records into the calling thread's ring: by the writer's
// ticks (writer.cpp), at stage edges, heap highs, waits and the end (tracer.cpp). Above the
// recording core, below both its callers.
#pragma once

#include <cstdint>

#include "profiler/preload/recording_core.h"
#include "profiler/trace/trace_format.h"

namespace memstage::preload {

// Pushes one RSS record and one allocator-statistics record (and counters in stats and
// sample modes), and the memory shares where due (`at_end`: the process's last samples).
void push_samples(ThreadState* ts, bool with_allocator_stats, bool at_end = false);
// Pushes the process's call counters (kCounters), summed over the threads.
void push_counters(ThreadState* ts);
// One RSS record (and the RAM limit's, when passed).
void push_rss(ThreadState* ts);
// The same, only where RSS is above every RSS written so far (a wait once the timeline
// coarsens: the run's peak RSS stays exact, a steady service's waits write nothing).
void push_rss_if_high(ThreadState* ts);
// The kernel's high-water mark of RSS, at the trace's end: a peak between two samples
// (inline sampling, on the program's own calls, is less even than the writer thread's
// ticks) still shows in the report's peak RSS.
void push_rss_high_water(ThreadState* ts);
// Stats and sample modes: the live heap and its high since the previous record
// (trace_format.h, kHeapCounters), the calling thread's own change added first, and the
// call counters.
void push_heap_counters(ThreadState* ts);

// Stats and sample modes: adds the thread's change of live heap to the process's, raising
// the high (callable without the re-entry guard: it sets it, and keeps errno).
void fold_heap_bytes(ThreadState* ts);
inline constexpr auto kHeapFoldBytes = static_cast<int64_t>(trace::kHeapFoldBytes);

// Keeps an approximate live heap (usable sizes) so that RSS and the allocator's own
// figures are sampled when the heap reaches a new high, between timer ticks: the RSS
// breakdown and fragmentation reported at the peak then describe the peak, not the
// program's start or exit. Each new high is 1/64 above the last (at least 1 MiB), so a
// run takes a few hundred such samples however long it runs. Asking the allocator walks
// its free lists (mallinfo2): at most once a sampling interval here; a high in between
// leaves the question to the writer's next tick.
void note_live_bytes(ThreadState* ts, int64_t live);
// Full and aggregate modes: the thread's change of the approximate live heap, folded into
// the process's every kFoldLiveBytes. Inline: it runs on every recorded call.
inline constexpr int64_t kFoldLiveBytes = 256 * 1024;
inline void track_live_bytes(ThreadState* ts, int64_t delta) {
  ts->unfolded_live_bytes += delta;
  if (ts->unfolded_live_bytes < kFoldLiveBytes && ts->unfolded_live_bytes > -kFoldLiveBytes) return;
  const int64_t live = g_tracer.approx_live_bytes.fetch_add(ts->unfolded_live_bytes, std::memory_order_relaxed) +
                       ts->unfolded_live_bytes;
  ts->unfolded_live_bytes = 0;
  note_live_bytes(ts, live);
}

}  // namespace memstage::preload
