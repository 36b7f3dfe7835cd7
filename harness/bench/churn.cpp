// An allocation-churn program for overhead benchmarks: N threads each make millions of
// small malloc/free pairs, shaped like a program's: object sizes from a small skewed set,
// half of the blocks temporaries freed at once, the rest kept in a sliding window.
// `random` as third argument draws sizes uniformly from 16..527 bytes instead, the
// worst case for trace compression; `forked` runs the work in a forked child (what a
// DataLoader worker pays), the parent waiting.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

bool g_random_sizes = false;

size_t next_size(unsigned x) {
  static constexpr size_t kObjectSizes[] = {16, 24, 32, 32, 48, 64, 64, 96, 128, 256, 24, 32, 40, 16, 512, 64};
  return g_random_sizes ? 16 + (x >> 20) % 512 : kObjectSizes[(x >> 20) % 16];
}

void churn(unsigned seed, long iterations, unsigned long* checksum) {
  constexpr int kWindow = 64;
  void* window[kWindow] = {};
  unsigned long sum = 0;
  unsigned x = seed;
  for (long i = 0; i < iterations; ++i) {
    x = x * 1664525u + 1013904223u;
    void* p = malloc(next_size(x));
    static_cast<char*>(p)[0] = static_cast<char>(i);
    sum += static_cast<unsigned char*>(p)[0];
    if (x & (1u << 12)) {
      free(p);  // a temporary
      continue;
    }
    // The rest live a while in a sliding window.
    const int slot = static_cast<int>(x >> 26) % kWindow;
    free(window[slot]);
    window[slot] = p;
  }
  for (void* p : window) free(p);
  *checksum = sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  const long iterations = argc > 2 ? atol(argv[2]) : 2'000'000;
  const std::string variant = argc > 3 ? argv[3] : "";
  g_random_sizes = variant == "random";
  if (variant == "forked") {
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child > 0) {
      int status = 0;
      return waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
  }
  std::vector<std::thread> pool;
  std::vector<unsigned long> sums(threads);
  for (int t = 0; t < threads; ++t) pool.emplace_back(churn, 12345u + t, iterations, &sums[t]);
  for (auto& t : pool) t.join();
  unsigned long total = 0;
  for (auto s : sums) total += s;
  printf("%lu\n", total);
}
