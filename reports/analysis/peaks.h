// The highs of the run or of one stage instance, one aggregator of the analysis
// (reports/analysis): the heap with the moment and the replay position that reached it,
// RSS as measured and without the tracer's own, the tracer's own resident memory, and
// anonymous mmap'd bytes. Fed by pass one whatever the capture: full mode's events, stats
// and sample modes' heap counters, aggregate mode's heap records.
#pragma once

#include <algorithm>
#include <cstdint>

#include "reports/model/report_model.h"

namespace memstage::reports {

struct Peaks {
  uint64_t heap_bytes = 0;
  uint64_t heap_ns = 0;
  uint64_t heap_event = 0;  // the replay position that reached it (0: none)
  uint64_t rss_bytes = 0;   // the tracer's own memory included
  uint64_t program_rss_bytes = 0;
  uint64_t tracer_bytes = 0;
  uint64_t mmap_bytes = 0;

  // A stage's highs start where the process stands when it begins.
  static Peaks starting_at(uint64_t heap_bytes, uint64_t ns, uint64_t rss_bytes, uint64_t tracer_bytes) {
    Peaks p;
    p.heap_bytes = heap_bytes;
    p.heap_ns = ns;
    p.rss_bytes = rss_bytes;
    p.program_rss_bytes = program_rss(rss_bytes, tracer_bytes);
    p.tracer_bytes = tracer_bytes;
    return p;
  }
  void reach_heap(uint64_t live_bytes, uint64_t ns, uint64_t event) {
    if (live_bytes <= heap_bytes) return;
    heap_bytes = live_bytes;
    heap_ns = ns;
    heap_event = event;
  }
  void sample_rss(uint64_t rss, uint64_t tracer) {
    rss_bytes = std::max(rss_bytes, rss);
    program_rss_bytes = std::max(program_rss_bytes, program_rss(rss, tracer));
    tracer_bytes = std::max(tracer_bytes, tracer);
  }
  // The kernel's high-water mark of RSS (kRssHighWater): a spike between two samples
  // still counts. When it came is unknown: the program's share is at least the mark less
  // the tracer's highest.
  void rss_high_water(uint64_t rss) {
    rss_bytes = std::max(rss_bytes, rss);
    program_rss_bytes = std::max(program_rss_bytes, program_rss(rss, tracer_bytes));
  }
  void note_mmap(uint64_t bytes) { mmap_bytes = std::max(mmap_bytes, bytes); }
  // A nested stage's heap and RSS highs were its parent's too, while it ran (mmap highs
  // are noted in every open stage as they happen).
  void absorb(const Peaks& nested) {
    if (nested.heap_bytes > heap_bytes) {
      heap_bytes = nested.heap_bytes;
      heap_ns = nested.heap_ns;
      heap_event = nested.heap_event;
    }
    rss_bytes = std::max(rss_bytes, nested.rss_bytes);
    program_rss_bytes = std::max(program_rss_bytes, nested.program_rss_bytes);
    tracer_bytes = std::max(tracer_bytes, nested.tracer_bytes);
  }
  // Into the report's figures of the run or a stage.
  void fill(MemoryFigures& f, double ns_per_s) const {
    f.peak_heap_bytes = heap_bytes;
    f.peak_heap_time_s = heap_ns / ns_per_s;
    f.peak_rss_bytes = rss_bytes;
    f.peak_program_rss_bytes = program_rss_bytes;
    f.tracer_peak_bytes = tracer_bytes;
    f.mmap_peak_bytes = mmap_bytes;
  }

  static uint64_t program_rss(uint64_t rss, uint64_t tracer) { return rss > tracer ? rss - tracer : 0; }
};

}  // namespace memstage::reports
