// What each way of ordering the tracer's events costs a traced thread, per event: the
// process-wide counter it uses (one locked add on a shared line), against the per-thread
// timestamps of an invariant clock that would replace it (RDTSC, and LFENCE;RDTSC: an
// allocation's stamp must be read after the allocator's own reads, or a block reused by
// another thread could be stamped before its free). Each event also writes its stamp to a
// thread-private slot, as push_event does. At 2 threads the counter's line is shared.
// BM_order_tracer is what the tracer does (event_order.h): events alternate between an
// allocation, which reads the counter with its ring marked, and a free, which takes a number.
// Run: build/bench/memstage_bench_event_order (x86-64 only).
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "profiler/preload/event_order.h"

namespace {

alignas(64) std::atomic<uint64_t> g_next_seq{0};

template <class Stamp>
void run(benchmark::State& state, Stamp stamp) {
  alignas(64) uint64_t slots[512];
  uint64_t i = 0;
  for (auto _ : state) {
    slots[i++ & 511] = stamp();
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(slots);
  state.SetItemsProcessed(state.iterations());
}

void BM_order_shared_counter(benchmark::State& state) {
  run(state, [] { return g_next_seq.fetch_add(1, std::memory_order_relaxed); });
}
void BM_order_tracer(benchmark::State& state) {
  static memstage::preload::EventNumbers numbers;
  auto ring = std::make_unique<memstage::preload::EventRing>();
  memstage::preload::detect_prefetch_for_write();
  bool allocation = true;
  run(state, [&] {
    allocation = !allocation;
    if (!allocation) return ring->take_number(numbers.next);
    const uint64_t n = ring->read_number(numbers.next);
    ring->publish(0);  // clears the mark, as a publish does
    return n;
  });
}
void BM_order_rdtsc(benchmark::State& state) {
  run(state, [] { return __rdtsc(); });
}
void BM_order_lfence_rdtsc(benchmark::State& state) {
  run(state, [] {
    _mm_lfence();
    return __rdtsc();
  });
}

}  // namespace

BENCHMARK(BM_order_shared_counter)->ThreadRange(1, 2);
BENCHMARK(BM_order_tracer)->ThreadRange(1, 2);
BENCHMARK(BM_order_rdtsc)->ThreadRange(1, 2);
BENCHMARK(BM_order_lfence_rdtsc)->ThreadRange(1, 2);

BENCHMARK_MAIN();
