// e2e.stage_limits: more distinct stage names and deeper nesting than the tracer keeps.
//
//   outer                          the only stage the program allocates in directly
//     name0 .. name69999           one stage each, begun and ended; past the tracer's
//                                  65,536 distinct names the begins (and ends) are dropped,
//                                  so what those stages allocate counts in `outer`
//     name1 x 300 nested           past 256 levels the begins (and ends) are dropped:
//                                  what the innermost allocates counts in the deepest kept
//
// Before begins and ends were kept paired, the ends of dropped begins closed `outer` early
// and its later allocations landed outside any stage. The stages allocate a block and free
// it; `outer` keeps (leaks) its own blocks, so every figure checked is exact.
#include <memstage/stage.h>

#include "e2e_common.h"

namespace {

constexpr int kDistinctStages = 70000;
constexpr int kNested = 300;
// The tracer's limits (profiler/trace/trace_format.h), stated here as the contract.
constexpr int kMaxStageNames = 65536;
constexpr int kMaxStageDepth = 256;

E2E_FRAME void allocate_and_free(size_t size) {
  void* p = malloc(size);
  escape(p);
  free(p);
  barrier();
}

E2E_FRAME void* keep(size_t size) {
  void* p = malloc(size);
  escape(p);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  static char names[kDistinctStages][16];
  for (int i = 0; i < kDistinctStages; ++i) snprintf(names[i], sizeof(names[i]), "name%d", i);

  memstage_stage_begin("outer");
  keep(1001);
  long long outer_allocations = 1, outer_bytes = 1001;
  for (int i = 0; i < kDistinctStages; ++i) {
    memstage_stage_begin(names[i]);
    // `outer` takes the first name: the stages from kMaxStageNames - 1 on are dropped.
    // Only the last stages kept and the dropped ones allocate: a stage with no events
    // keeps the report small.
    if (i >= kMaxStageNames - 1 - 10) allocate_and_free(64);
    if (i >= kMaxStageNames - 1) ++outer_allocations, outer_bytes += 64;
    memstage_stage_end();
  }
  keep(1002);
  ++outer_allocations, outer_bytes += 1002;

  for (int i = 0; i < kNested; ++i) memstage_stage_begin(names[1]);
  allocate_and_free(4096);  // in the deepest stage kept: depth kMaxStageDepth - 1
  for (int i = 0; i < kNested; ++i) memstage_stage_end();
  keep(1003);
  ++outer_allocations, outer_bytes += 1003;
  memstage_stage_end();

  static Truth truth;
  truth.add("outer_allocations", outer_allocations);
  truth.add("outer_bytes_allocated", outer_bytes);
  truth.add("outer_leaked_bytes", 1001 + 1002 + 1003);
  truth.add("recorded_stages", 1 + (kMaxStageNames - 1) + (kMaxStageDepth - 1));
  truth.add("dropped_for_names", kDistinctStages - (kMaxStageNames - 1));
  truth.add("dropped_for_depth", kNested - (kMaxStageDepth - 1));
  truth.add("max_stage_names", kMaxStageNames);
  truth.add("max_stage_depth", kMaxStageDepth);
  truth.write_to(truth_file);
  return 0;
}
