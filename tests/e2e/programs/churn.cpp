// e2e.aggregate_size: ITERATIONS malloc/free pairs, the shape of the benchmark's churn
// (harness/bench/churn.cpp) on one thread, inside a stage: small objects, half of them
// temporaries, the rest kept a while in a sliding window. The same few sites whatever
// the length, so an aggregated capture must not grow with it.
#include <memstage/stage.h>

#include "e2e_common.h"

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  const long iterations = argc > 2 ? atol(argv[2]) : 100000;
  static constexpr size_t kObjectSizes[] = {16, 24, 32, 32, 48, 64, 64, 96, 128, 256, 24, 32, 40, 16, 512, 64};
  constexpr int kWindow = 64;
  void* window[kWindow] = {};
  unsigned x = 12345;
  memstage_stage_begin("churn");
  for (long i = 0; i < iterations; ++i) {
    x = x * 1664525u + 1013904223u;
    void* p = malloc(kObjectSizes[(x >> 20) % 16]);
    escape(p);
    if (x & (1u << 12)) {
      free(p);
      continue;
    }
    const int slot = static_cast<int>(x >> 26) % kWindow;
    free(window[slot]);
    window[slot] = p;
  }
  for (void* p : window) free(p);
  memstage_stage_end();
  static Truth truth;
  truth.add("iterations", iterations);
  truth.write_to(truth_file);
  return 0;
}
