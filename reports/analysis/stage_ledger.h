// The stage instances of one replay, the heap's (stages.h) or device memory's
// (device_memory.h): one ledger of what each instance allocated and still holds, so that
// a stage's retained bytes and its highs carried into its parent are counted one way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "reports/analysis/suffix_sums.h"

namespace memstage::reports {

// Instance: a stage's figures, with `retained_bytes` and `absorb(child)` (its highs take
// a closed child's).
template <class Instance>
class StageLedger {
 public:
  std::vector<Instance> instances;  // in the order they began

  void add_instance(Instance s) {
    instances.push_back(std::move(s));
    live_self_bytes_.push_back();
  }
  // Bytes allocated in instance `stage` became live (delta > 0) or were freed; -1: outside
  // every stage.
  void add_live(int stage, int64_t delta_bytes) {
    if (stage >= 0) live_self_bytes_.add(static_cast<size_t>(stage), delta_bytes);
  }
  // Instance `index` ends, inside `parent` (-1: none): it retained what it and the stages
  // begun in it still hold (every instance from it to the newest, as they are numbered in
  // the order they begin), and its parent's highs take its own.
  Instance& close_instance(int index, int parent) {
    Instance& s = instances[index];
    const int64_t retained = live_self_bytes_.suffix(static_cast<size_t>(index));
    s.retained_bytes = static_cast<uint64_t>(std::max<int64_t>(0, retained));
    if (parent >= 0) instances[parent].absorb(s);
    return s;
  }

 private:
  SuffixSums live_self_bytes_;  // per instance: live bytes allocated in it
};

}  // namespace memstage::reports
