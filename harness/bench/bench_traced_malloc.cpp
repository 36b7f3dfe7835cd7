// Cost of one malloc/free pair, for running untraced and under the tracer
// (harness/bench/overhead.sh runs it each way and prints the ratios).
#include <benchmark/benchmark.h>

#include <cstdlib>

static void BM_malloc_free(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = malloc(size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_malloc_free)->Arg(32)->Arg(4096)->ThreadRange(1, 2);

static void BM_new_delete_deep_stack(benchmark::State& state) {
  // The same pair under a deeper call stack: unwinding cost grows with depth.
  struct Recurse {
    static void at(int depth, benchmark::State& s) {
      if (depth > 0) {
        at(depth - 1, s);
        benchmark::ClobberMemory();
        return;
      }
      for (auto _ : s) {
        int* p = new int[8];
        benchmark::DoNotOptimize(p);
        delete[] p;
      }
    }
  };
  Recurse::at(static_cast<int>(state.range(0)), state);
}
BENCHMARK(BM_new_delete_deep_stack)->Arg(5)->Arg(30);

BENCHMARK_MAIN();
