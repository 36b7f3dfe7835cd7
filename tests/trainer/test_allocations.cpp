// Without the tracer: the optimized pipeline's allocations do not depend on the number of
// epochs (so the train loop allocates nothing per batch once warm), while the naive
// pipeline's bytes grow with rows × vocabulary. Counts every operator new in this binary.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "helpers.h"
#include "trainer/pipeline.h"

namespace {
std::atomic<std::uint64_t> g_allocations{0};
std::atomic<std::uint64_t> g_bytes{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(size, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

struct Counts {
  std::uint64_t allocations;
  std::uint64_t bytes;
};

Counts count_run(const trainer::Config& config) {
  const std::uint64_t a0 = g_allocations.load();
  const std::uint64_t b0 = g_bytes.load();
  const auto result = trainer::run(config);
  REQUIRE(result.train_rows > 0);
  return {g_allocations.load() - a0, g_bytes.load() - b0};
}

}  // namespace

TEST_CASE("optimized: the number of epochs does not change the allocations", "[allocations]") {
  trainer::Config config;
  config.pipeline = trainer::Pipeline::optimized;
  config.data_path = trainer_test::data_file("spam_assassin.train.csv.gz");
  config.test_path = trainer_test::data_file("spam_assassin.test.csv.gz");
  config.max_rows = 600;
  config.max_test_rows = 100;
  config.batch_rows = 16;
  config.hidden = 8;
  config.epochs = 1;
  count_run(config);  // first calls make one-time allocations (library statics); not counted
  const Counts one = count_run(config);
  config.epochs = 4;  // 4 × 38 batches instead of 38
  const Counts four = count_run(config);
  INFO("1 epoch: " << one.allocations << " allocations; 4 epochs: " << four.allocations);
  CHECK(four.allocations == one.allocations);
  CHECK(four.bytes == one.bytes);
  config.threads = 2;  // with the reader thread: the thread is made once per run
  config.epochs = 1;
  const Counts threaded_one = count_run(config);
  config.epochs = 4;
  CHECK(count_run(config).allocations == threaded_one.allocations);
  config.threads = 1;
  config.hash_bits = 14;
  config.epochs = 1;
  const Counts hashed_one = count_run(config);
  config.epochs = 3;
  CHECK(count_run(config).allocations == hashed_one.allocations);
}

TEST_CASE("naive: bytes allocated grow faster than the rows", "[allocations]") {
  trainer::Config config;
  config.pipeline = trainer::Pipeline::naive;
  config.data_path = trainer_test::data_file("spam_assassin.train.csv.gz");
  config.split_ratio = 0.2;
  config.epochs = 1;
  std::uint64_t bytes[3];
  for (int i = 0; i < 3; ++i) {
    config.max_rows = 200u << i;  // 200, 400, 800
    bytes[i] = count_run(config).bytes;
  }
  // The whole file is read whatever max_rows is: compare increments, which cancel it.
  // Linear growth would double the increment; rows × a growing vocabulary does more.
  const double first_step = static_cast<double>(bytes[1] - bytes[0]);
  const double second_step = static_cast<double>(bytes[2] - bytes[1]);
  INFO("bytes at 200, 400, 800 rows: " << bytes[0] << ", " << bytes[1] << ", " << bytes[2]);
  CHECK(second_step > 2.3 * first_step);
}
