#include "reports/analysis/stages.h"

#include <utility>

namespace memstage::reports {

void StageAggregator::begin(uint32_t name_id, uint64_t now_ns, const Peaks& start,
                            const trace::CountersRecord* counters) {
  StageInstance s;
  s.name_id = name_id;
  s.parent = innermost();
  s.depth = static_cast<int>(open_.size());
  s.start_ns = now_ns;
  s.peaks = start;
  s.at_start = start;
  if (counters) s.counters_at_begin = *counters;
  add_instance(std::move(s));
  open_.push_back(static_cast<int>(instances.size()) - 1);
}

int StageAggregator::end_innermost(uint64_t now_ns, const trace::CountersRecord* counters, bool closed) {
  const int index = open_.back();
  open_.pop_back();
  StageInstance& s = instances[index];
  s.closed = closed;
  s.end_ns = now_ns;
  if (counters) {
    s.counters_inclusive.allocations = counters->allocations - s.counters_at_begin.allocations;
    s.counters_inclusive.frees = counters->frees - s.counters_at_begin.frees;
    s.counters_inclusive.bytes_allocated = counters->bytes_allocated - s.counters_at_begin.bytes_allocated;
  }
  close_instance(index, s.parent);
  return index;
}

std::vector<trace::CountersRecord> StageAggregator::own_counters() const {
  std::vector<trace::CountersRecord> own(instances.size());
  for (size_t i = 0; i < instances.size(); ++i) own[i] = instances[i].counters_inclusive;
  for (const StageInstance& s : instances) {
    if (s.parent < 0) continue;
    own[s.parent].allocations -= s.counters_inclusive.allocations;
    own[s.parent].frees -= s.counters_inclusive.frees;
    own[s.parent].bytes_allocated -= s.counters_inclusive.bytes_allocated;
  }
  return own;
}

}  // namespace memstage::reports
