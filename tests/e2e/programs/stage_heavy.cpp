// e2e.stage_heavy: a serving loop that marks every batch as a stage, 50,000 times.
//
//   batch          x kBatches   8 blocks from 8 stacks (call depths 1..8), held to its end
//     forward      x kBatches   a buffer of (i % 97 + 1) x 4096 bytes, freed; batch
//                               kPeakBatch's is 64 MiB instead: the run's peak
//   every 1000th batch leaks 100 bytes from its forward stage
//
// Each instance holds memory from eight stacks at its peak, as a real batch does: a report
// that kept every instance's stacks grows with the run (docs/architecture.md, "stage
// instances grouped by path"). The program knows each path's allocation count, bytes,
// leaks and highest peak (its own blocks; e2e.py adds the baseline) and which batch holds
// that peak.
#include <memstage/stage.h>

#include "e2e_common.h"

namespace {

constexpr int kDefaultBatches = 50000;  // a second argument sets another count (measurements)
constexpr int kPeakBatch = 31337;
constexpr int kStacks = 8;
constexpr long long kBlockBytes = 256;
constexpr long long kPeakBytes = 64ll << 20;

E2E_FRAME void* at_depth(int depth, long long size) {
  if (depth > 1) {
    void* p = at_depth(depth - 1, size);
    barrier();
    return p;
  }
  void* p = malloc(static_cast<size_t>(size));
  escape(p);
  return p;
}

E2E_FRAME void forward(int batch, long long& leaked) {
  const long long size = batch == kPeakBatch ? kPeakBytes : (batch % 97 + 1) * 4096ll;
  void* p = malloc(static_cast<size_t>(size));
  escape(p);
  memset(p, 1, static_cast<size_t>(size));
  free(p);
  if (batch % 1000 == 0) {
    escape(malloc(100));
    leaked += 100;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  const int kBatches = argc > 2 ? atoi(argv[2]) : kDefaultBatches;
  void* held[kStacks];
  long long forward_bytes = 0, forward_allocations = 0, leaked = 0;
  for (int i = 0; i < kBatches; ++i) {
    memstage_stage_begin("batch");
    for (int s = 0; s < kStacks; ++s) held[s] = at_depth(s + 1, kBlockBytes);
    memstage_stage_begin("forward");
    forward(i, leaked);
    forward_bytes += i == kPeakBatch ? kPeakBytes : (i % 97 + 1) * 4096ll;
    forward_allocations += 1 + (i % 1000 == 0);
    if (i % 1000 == 0) forward_bytes += 100;
    memstage_stage_end();
    for (int s = 0; s < kStacks; ++s) free(held[s]);
    memstage_stage_end();
  }
  Truth truth;
  truth.add("batches", kBatches);
  if (kBatches > kPeakBatch) {
    truth.add("peak_batch", kPeakBatch);
    // The highest live heap of the program's own blocks, in either stage: the batch's
    // blocks, the peak batch's forward buffer and the blocks leaked before it.
    truth.add("peak_own_bytes", kStacks * kBlockBytes + kPeakBytes + (kPeakBatch / 1000 + 1) * 100);
  }
  truth.add("batch_allocations", static_cast<long long>(kBatches) * kStacks);
  truth.add("batch_bytes", static_cast<long long>(kBatches) * kStacks * kBlockBytes);
  truth.add("forward_allocations", forward_allocations);
  truth.add("forward_bytes", forward_bytes);
  truth.add("leaked_bytes", leaked);
  truth.write_to(truth_file);
  return 0;
}
