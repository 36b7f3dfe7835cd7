// Stage instances as pass one follows them, one aggregator of the analysis
// (reports/analysis): which stages are open (they nest in one process-wide stack,
// docs/architecture.md "Stages"), and per instance its highs, what was allocated while it
// was the innermost one, its frees, temporaries and leaks, the bytes it retained at its
// end, and where the tracer only counts (stats and sample modes) the process-wide counters
// over its span. Fed by pass one whatever the capture: events, sampled events, counters,
// and aggregate mode's stage and site records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/peaks.h"
#include "reports/analysis/stage_ledger.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

struct StageInstance {
  uint32_t name_id = 0;
  int parent = -1;
  int depth = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  bool closed = false;
  Peaks peaks;
  Peaks at_start;  // where the process stood when it began: its rises are measured from there
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
  uint64_t temporary_allocations = 0;
  uint64_t retained_bytes = 0;
  uint64_t leaked_bytes = 0;
  uint64_t leaked_blocks = 0;
  RssBreakdown breakdown;
  bool has_breakdown = false;
  trace::CountersRecord counters_at_begin;  // stats and sample modes
  trace::CountersRecord counters_inclusive;

  void absorb(const StageInstance& child) { peaks.absorb(child.peaks); }
};

// The instances themselves, their retained bytes and highs, in the ledger shared with
// device memory (stage_ledger.h); here which are open and what each counted.
class StageAggregator : public StageLedger<StageInstance> {
 public:
  std::vector<std::string> names;  // by name id

  int innermost() const { return open_.empty() ? -1 : open_.back(); }

  // A stage begins inside the innermost open one, its highs from `start`.
  void begin(uint32_t name_id, uint64_t now_ns, const Peaks& start, const trace::CountersRecord* counters);
  // The innermost open stage ends at now_ns (closed: by its end record, not the run's
  // end). Returns its index.
  int end_innermost(uint64_t now_ns, const trace::CountersRecord* counters, bool closed);

  void reach_heap(uint64_t live_bytes, uint64_t ns, uint64_t event) {
    if (!open_.empty()) instances[open_.back()].peaks.reach_heap(live_bytes, ns, event);
  }
  void sample_rss(uint64_t rss, uint64_t tracer) {
    if (!open_.empty()) instances[open_.back()].peaks.sample_rss(rss, tracer);
  }
  void note_mmap(uint64_t bytes) {
    for (int i : open_) instances[i].peaks.note_mmap(bytes);
  }
  // An allocation in `stage` (-1: outside every stage); `counted`: the event is the
  // allocation itself, not a sample of it (sample mode counts with counters).
  void allocated(int stage, uint64_t size, bool counted) {
    if (stage < 0) return;
    if (counted) {
      ++instances[stage].allocations;
      instances[stage].bytes_allocated += size;
    }
    add_live(stage, static_cast<int64_t>(size));
  }
  // A block allocated in `stage` freed, while the innermost open stage is the one freeing.
  void freed(int stage, uint64_t size, bool temporary) {
    if (!open_.empty()) ++instances[open_.back()].frees;
    if (stage < 0) return;
    add_live(stage, -static_cast<int64_t>(size));
    if (temporary) ++instances[stage].temporary_allocations;
  }
  void leaked(int stage, uint64_t bytes, uint64_t blocks) {
    if (stage < 0) return;
    instances[stage].leaked_bytes += bytes;
    instances[stage].leaked_blocks += blocks;
  }
  // Stats and sample modes: each instance's own share of the process-wide counters, its
  // span's less its children's.
  std::vector<trace::CountersRecord> own_counters() const;

 private:
  std::vector<int> open_;
};

}  // namespace memstage::reports
