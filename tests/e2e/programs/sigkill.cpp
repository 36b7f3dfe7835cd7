// e2e.sigkill: holds 50 blocks of 1 MiB + 7 bytes (more than 50 MiB) from hold_block(),
// sleeps 1 s (the tracer writes at least every 50 ms), then sends itself SIGKILL: no
// handler runs, the trace ends at the tracer's last write. With "threaded" after the
// truth file, a second thread first churns 500k blocks, so that the tracer's writer and
// compressor threads write what the sleep waits for.
#include <signal.h>
#include <time.h>

#include "e2e_common.h"

constexpr size_t kBlockSize = 1048576 + 7;
constexpr int kBlocks = 50;

E2E_FRAME void hold_block(int i) {
  void* p = malloc(kBlockSize);
  escape(p);
  memset(p, i, kBlockSize);
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  if (argc > 2 && strcmp(argv[2], "threaded") == 0) churn_in_a_second_thread(500'000);
  for (int i = 0; i < kBlocks; ++i) hold_block(i);
  static Truth truth;
  truth.add("blocks", kBlocks);
  truth.add_u("size", kBlockSize);
  truth.write_to(truth_file);
  timespec one_second{1, 0};
  while (nanosleep(&one_second, &one_second) != 0) {
  }
  raise(SIGKILL);
  return 0;
}
