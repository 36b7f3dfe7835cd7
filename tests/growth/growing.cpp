// tests/growth: a program that runs a few seconds and knows how its memory grows.
//   leak_step():   leaks 4 blocks of 64 KiB every 50 ms, from start to end: steady growth
//   hold_buffer(): 32 MiB allocated at the start and held to the end: a constant buffer
//   burst():       8 blocks of 4 MiB, one every 25 ms from 1 s on, held: a one-off burst
//   churn():       blocks allocated and freed within each step: live bytes around a level
// Truth (its first argument, JSON): the leak's rate by the program's own clock (bytes
// leaked between the first and the last step over the time between them), its source
// line, and the functions of the other sites.
#include <time.h>

#include <cstdint>

#include "tests/e2e/programs/e2e_common.h"

namespace {

constexpr int kSteps = 80;                   // x 50 ms: 4 s
constexpr long kStepNs = 50'000'000;
constexpr int kLeakBlocksPerStep = 4;
constexpr size_t kLeakBlockBytes = 64 << 10;
constexpr size_t kBufferBytes = 32 << 20;
constexpr int kBurstBlocks = 8;
constexpr size_t kBurstBlockBytes = 4 << 20;
constexpr int kBurstFirstStep = 20;          // 1 s in

void* g_leaked[kSteps * kLeakBlocksPerStep];
void* g_burst[kBurstBlocks];
int g_leak_line;

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

E2E_FRAME void leak_step(int step) {
  for (int i = 0; i < kLeakBlocksPerStep; ++i) {
    g_leak_line = __LINE__; void* p = malloc(kLeakBlockBytes);
    escape(p);
    memset(p, step & 0xff, kLeakBlockBytes);
    g_leaked[step * kLeakBlocksPerStep + i] = p;
  }
}

E2E_FRAME char* hold_buffer() {
  char* p = static_cast<char*>(malloc(kBufferBytes));
  escape(p);
  memset(p, 1, kBufferBytes);
  return p;
}

E2E_FRAME void burst(int i) {
  void* p = malloc(kBurstBlockBytes);
  escape(p);
  memset(p, 2, kBurstBlockBytes);
  g_burst[i] = p;
}

E2E_FRAME unsigned churn(int step) {
  unsigned sum = 0;
  void* blocks[16];
  for (int i = 0; i < 16; ++i) {
    blocks[i] = malloc(1000 + static_cast<size_t>((step * 7919 + i * 104729) % 200000));
    escape(blocks[i]);
    sum += static_cast<unsigned>(reinterpret_cast<uintptr_t>(blocks[i]) >> 4);
  }
  for (void* p : blocks) free(p);
  return sum;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  char* buffer = hold_buffer();
  double first_leak_s = 0, last_leak_s = 0;
  unsigned sum = 0;
  int burst_done = 0;
  for (int step = 0; step < kSteps; ++step) {
    const double t = now_s();
    leak_step(step);
    if (step == 0) first_leak_s = t;
    last_leak_s = t;
    sum += churn(step);
    // The burst: one block every 25 ms for 200 ms (two per step).
    if (step >= kBurstFirstStep && burst_done < kBurstBlocks) {
      burst(burst_done++);
      timespec half{0, kStepNs / 2};
      nanosleep(&half, nullptr);
      burst(burst_done++);
      timespec rest{0, kStepNs / 2};
      nanosleep(&rest, nullptr);
      continue;
    }
    timespec ts{0, kStepNs};
    nanosleep(&ts, nullptr);
  }
  Truth truth;
  // Leaked from the first step to the last, over the time between them.
  const double leaked_between = static_cast<double>((kSteps - 1) * kLeakBlocksPerStep * kLeakBlockBytes);
  truth.add("leak_bytes_per_s", static_cast<long long>(leaked_between / (last_leak_s - first_leak_s)));
  truth.add("leak_line", g_leak_line);
  truth.add("leaked_bytes", static_cast<long long>(kSteps * kLeakBlocksPerStep * kLeakBlockBytes));
  truth.add("buffer_bytes", static_cast<long long>(kBufferBytes));
  truth.add("burst_bytes", static_cast<long long>(kBurstBlocks * kBurstBlockBytes));
  truth.add_str("source", "growing.cpp");
  truth.add("checksum", sum & 1);
  truth.write_to(argv[1]);
  free(buffer);
  return 0;
}
