// e2e.aggregate_aging: a 3-second run whose figures do not depend on how often it is
// sampled: a stage "early" holding 8 MiB (the run's peak) at the start, then small blocks
// now and then, and a stage "late" holding 4 MiB near the end. Run in aggregate mode with
// and without the timeline coarsening as it ages (MEMSTAGE_TIMELINE_TICKS): the peaks and
// stages must be the same, the capture smaller. e2e.timeline_aging_counting runs it in stats
// and sample modes at two lengths: an optional STEPS (50) sets how many 50 ms steps.
//   aging TRUTH_FILE [STEPS]
#include <time.h>

#include <cstdlib>

#include <memstage/stage.h>

#include "e2e_common.h"

namespace {

constexpr size_t kMiB = 1 << 20;

void sleep_ms(long ms) {
  const timespec t{ms / 1000, (ms % 1000) * 1000 * 1000};
  nanosleep(&t, nullptr);
}

E2E_FRAME void hold(const char* stage, size_t bytes, long ms) {
  memstage::Stage s{stage};
  void* p = malloc(bytes);
  escape(p);
  memset(p, 1, bytes);
  sleep_ms(ms);
  free(p);
}

}  // namespace

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  const int steps = argc > 2 ? atoi(argv[2]) : 50;
  hold("early", 8 * kMiB, 50);
  for (int i = 0; i < steps; ++i) {  // small blocks, one every 50 ms
    void* p = malloc(1000);
    escape(p);
    sleep_ms(50);
    free(p);
  }
  hold("late", 4 * kMiB, 50);
  static Truth truth;
  truth.add_u("early_bytes", 8 * kMiB);
  truth.add_u("late_bytes", 4 * kMiB);
  truth.write_to(truth_file);
  return 0;
}
