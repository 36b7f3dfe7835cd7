// tests/serve: a service whose memory the test knows. It holds kHeldBlocks x kBlockBytes in
// hold_blocks() inside the stage "warm_up", writes READY, and once GO exists leaks
// kLeakBytes every kLeakPeriodMs in leak_steadily() until STOP exists (at most 120 s), then
// writes the leak's own rate (bytes over its seconds) to RATE and one line to stdout.
//   leaky_service READY GO STOP RATE
#include <memstage/stage.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kHeldBlocks = 32;
constexpr size_t kBlockBytes = size_t{1} << 20;
constexpr size_t kLeakBytes = 64 * 1024;
constexpr int kLeakPeriodMs = 20;

void* volatile g_sink;

bool exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (!f) exit(3);
  fputs(text, f);
  fclose(f);
}

__attribute__((noipa)) void hold_blocks() {
  for (int i = 0; i < kHeldBlocks; ++i) {
    void* p = malloc(kBlockBytes);
    memset(p, 1, kBlockBytes);
    g_sink = p;  // held for the program's life
  }
}

__attribute__((noipa)) void leak_steadily() {
  void* p = malloc(kLeakBytes);
  memset(p, 2, kLeakBytes);
  g_sink = p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  memstage_stage_begin("warm_up");
  hold_blocks();
  memstage_stage_end();
  write_file(argv[1], "ready\n");
  while (!exists(argv[2])) usleep(10 * 1000);
  const double start_s = now_s();
  size_t leaked_bytes = 0;
  while (!exists(argv[3]) && now_s() - start_s < 120) {
    leak_steadily();
    leaked_bytes += kLeakBytes;
    usleep(kLeakPeriodMs * 1000);
  }
  char rate[64];
  snprintf(rate, sizeof rate, "%.1f\n", leaked_bytes / (now_s() - start_s));
  write_file(argv[4], rate);
  printf("leaky_service: leaked %zu bytes\n", leaked_bytes);  // memstage's stdout is the service's alone
  return 0;
}
