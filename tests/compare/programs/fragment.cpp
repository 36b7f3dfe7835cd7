// A fragmenting workload for `memstage compare`: variable-size buffers (1 KiB–256 KiB,
// log-uniform so that small ones dominate by count and large ones by bytes) in a sliding
// window, with a few small survivors pinned in between, then most of it freed. Every byte
// is written, so what the allocator holds is also resident and /proc RSS can check it.
// Deterministic (fixed seed): every allocator sees the same sequence.
#include <memstage/stage.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr size_t kWindow = 500;
constexpr size_t kSurvivorEvery = 40;  // one small block in 40 outlives the window: the pins

std::vector<void*> g_survivors;

void churn(std::mt19937_64& rng, size_t allocations) {
  std::uniform_real_distribution<double> log_size(std::log(1024.0), std::log(256.0 * 1024));
  std::vector<void*> window(kWindow, nullptr);
  for (size_t i = 0; i < allocations; ++i) {
    const size_t bytes = static_cast<size_t>(std::exp(log_size(rng)));
    void*& slot = window[i % kWindow];
    free(slot);
    slot = malloc(bytes);
    memset(slot, static_cast<int>(i), bytes);
    if (i % kSurvivorEvery == 0) {
      void* pin = malloc(64 + i % 512);
      memset(pin, 1, 64);
      g_survivors.push_back(pin);
    }
  }
  for (void* p : window) free(p);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t allocations = argc > 1 ? strtoull(argv[1], nullptr, 10) : 40000;
  std::mt19937_64 rng(42);
  {
    memstage::Stage stage{"churn"};
    churn(rng, allocations);
  }
  {
    memstage::Stage stage{"churn_again"};
    churn(rng, allocations / 2);
  }
  {
    // Most survivors go; the ones left keep pages (and, for some allocators, whole spans) alive.
    memstage::Stage stage{"free_most"};
    for (size_t i = 0; i < g_survivors.size(); ++i) {
      if (i % 10) free(g_survivors[i]);
    }
  }
  return 0;  // every tenth survivor is never freed: a known leak
}
