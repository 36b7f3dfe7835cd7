// An allocation-churn program for overhead benchmarks: N threads each make millions of
// small malloc/free pairs of varied sizes, with some blocks kept alive for a while.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

void churn(unsigned seed, long iterations, unsigned long* checksum) {
  constexpr int kWindow = 64;
  void* window[kWindow] = {};
  unsigned long sum = 0;
  unsigned x = seed;
  for (long i = 0; i < iterations; ++i) {
    x = x * 1664525u + 1013904223u;
    const size_t size = 16 + (x >> 20) % 512;
    void* p = malloc(size);
    static_cast<char*>(p)[0] = static_cast<char>(i);
    sum += static_cast<unsigned char*>(p)[0];
    // Keep a sliding window of live blocks so that frees are not all immediate.
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
  std::vector<std::thread> pool;
  std::vector<unsigned long> sums(threads);
  for (int t = 0; t < threads; ++t) pool.emplace_back(churn, 12345u + t, iterations, &sums[t]);
  for (auto& t : pool) t.join();
  unsigned long total = 0;
  for (auto s : sums) total += s;
  printf("%lu\n", total);
}
