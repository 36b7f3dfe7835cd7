// A service whose heap stays level while it churns: each request allocates 32 blocks of a
// skewed set of sizes (64 B to 16 KiB), keeps one of them in a cache of 4,096 that it
// replaces in turn and frees the rest, then sleeps 5 ms; for SECONDS seconds.
//   memstage_steady_service SECONDS
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kBlocksPerRequest = 32;
constexpr int kCachedBlocks = 4096;
constexpr int kSleepUs = 5000;
void* g_cache[kCachedBlocks];

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

size_t block_bytes(unsigned x) {
  static constexpr size_t kSizes[] = {64, 64, 128, 256, 256, 512, 1024, 2048, 4096, 16384};
  return kSizes[(x >> 16) % 10];
}

__attribute__((noipa)) unsigned long serve_request(long n, unsigned& x) {
  void* blocks[kBlocksPerRequest];
  unsigned long sum = 0;
  for (int i = 0; i < kBlocksPerRequest; ++i) {
    x = x * 1664525u + 1013904223u;
    const size_t bytes = block_bytes(x);
    blocks[i] = malloc(bytes);
    memset(blocks[i], static_cast<int>(n), bytes);
    sum += static_cast<unsigned char*>(blocks[i])[bytes - 1];
  }
  void*& slot = g_cache[n % kCachedBlocks];
  free(slot);
  slot = blocks[0];  // kept until the cache comes round again
  for (int i = 1; i < kBlocksPerRequest; ++i) free(blocks[i]);
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const double seconds = atof(argv[1]);
  const double start_s = now_s();
  unsigned x = 12345;
  unsigned long sum = 0;
  long n = 0;
  for (; now_s() - start_s < seconds; ++n) {
    sum += serve_request(n, x);
    usleep(kSleepUs);
  }
  printf("steady_service: %ld requests, checksum %lu\n", n, sum);
  return 0;
}
