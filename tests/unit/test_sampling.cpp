// Sample mode's sampler (profiler/preload/byte_sampler.h) and its unbiasing
// (profiler/trace/sampling.h), on a simulated allocation stream whose truth is known:
// the estimates must be right on average over seeds, not only for a lucky one.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "profiler/preload/byte_sampler.h"
#include "profiler/trace/sampling.h"

namespace {

using memstage::preload::ByteSampler;
using memstage::trace::blocks_per_sample;
using memstage::trace::bytes_per_sample;

constexpr uint64_t kRateBytes = 64 * 1024;

// Three sites: many small objects (16..527 bytes, every 8th kept to the end: a leak),
// fewer medium buffers (4..68 KiB), and 1 MiB blocks (past the rate: always sampled).
struct Site {
  double bytes = 0, blocks = 0, leaked_bytes = 0;
};
struct Estimates {
  Site site[3];
};

// The stream is the same for every run (its own generator); only the sampler's seed varies.
Estimates run_stream(uint64_t seed, Estimates* truth) {
  ByteSampler sampler;
  sampler.start(kRateBytes, seed);
  Estimates est;
  uint32_t x = 12345;
  auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  auto allocate = [&](int site, uint64_t size, bool leaked) {
    if (truth) {
      truth->site[site].bytes += static_cast<double>(size);
      truth->site[site].blocks += 1;
      if (leaked) truth->site[site].leaked_bytes += static_cast<double>(size);
    }
    if (!sampler.sample(size)) return;
    est.site[site].bytes += bytes_per_sample(size, kRateBytes);
    est.site[site].blocks += blocks_per_sample(size, kRateBytes);
    if (leaked) est.site[site].leaked_bytes += bytes_per_sample(size, kRateBytes);
  };
  for (int i = 0; i < 1'000'000; ++i) {
    allocate(0, 16 + (next() >> 16) % 512, i % 8 == 0);
    if (i % 64 == 0) allocate(1, 4096 + (next() >> 8) % (64 * 1024), false);
    if (i % 4096 == 0) allocate(2, 1 << 20, i % 8192 == 0);
  }
  return est;
}

double relative_error(double estimate, double truth) { return std::fabs(estimate - truth) / truth; }

}  // namespace

TEST_CASE("sampled estimates of bytes, blocks and leaks average to the truth over 50 seeds") {
  Estimates truth;
  run_stream(1, &truth);
  Estimates mean;
  constexpr int kRuns = 50;
  for (int run = 0; run < kRuns; ++run) {
    const Estimates e = run_stream(0x9e3779b97f4a7c15ull * (run + 1), nullptr);
    for (int s = 0; s < 3; ++s) {
      mean.site[s].bytes += e.site[s].bytes / kRuns;
      mean.site[s].blocks += e.site[s].blocks / kRuns;
      mean.site[s].leaked_bytes += e.site[s].leaked_bytes / kRuns;
    }
    // Blocks of the rate or more are always sampled, at their exact size.
    CHECK(e.site[2].bytes == truth.site[2].bytes);
    CHECK(e.site[2].leaked_bytes == truth.site[2].leaked_bytes);
  }
  for (int s = 0; s < 3; ++s) {
    INFO("site " << s);
    CHECK(relative_error(mean.site[s].bytes, truth.site[s].bytes) < 0.02);
    CHECK(relative_error(mean.site[s].blocks, truth.site[s].blocks) < 0.02);
  }
  CHECK(relative_error(mean.site[0].leaked_bytes, truth.site[0].leaked_bytes) < 0.02);
}

TEST_CASE("a single run's error is about what the report says: sqrt(rate / bytes)") {
  Estimates truth;
  run_stream(1, &truth);
  int within_two_errors = 0;
  constexpr int kRuns = 50;
  for (int run = 0; run < kRuns; ++run) {
    const Estimates e = run_stream(0xd1b54a32d192ed03ull * (run + 1), nullptr);
    const double error = memstage::trace::relative_standard_error(truth.site[0].leaked_bytes, kRateBytes);
    if (relative_error(e.site[0].leaked_bytes, truth.site[0].leaked_bytes) < 2 * error) ++within_two_errors;
  }
  // About 95% of runs for a normal error; well over 80% however the seeds fall.
  CHECK(within_two_errors >= 40);
}

TEST_CASE("the sampler samples everything at the rate and up, and about size / rate below it") {
  ByteSampler sampler;
  sampler.start(kRateBytes, 7);
  for (int i = 0; i < 1000; ++i) CHECK(sampler.sample(kRateBytes));
  int sampled = 0;
  constexpr int kCalls = 2'000'000;
  for (int i = 0; i < kCalls; ++i) sampled += sampler.sample(64);
  const double expected = kCalls * -std::expm1(-64.0 / kRateBytes);
  CHECK(std::fabs(sampled - expected) < 5 * std::sqrt(expected));
}
