// The growth fit on synthetic series whose shape is known: a steady leak is listed at its
// rate; a constant buffer, a one-off burst, a cache that filled up and churn are not.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "reports/analysis/growth.h"

namespace reports = memstage::reports;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Series {
  std::vector<double> t_s;
  std::vector<uint64_t> live_bytes;
};

// `points` snapshots every `interval_s`, the value at each from `value(t)`.
template <typename Value>
Series make(size_t points, double interval_s, Value value) {
  Series s;
  for (size_t i = 0; i < points; ++i) {
    const double t = static_cast<double>(i) * interval_s;
    s.t_s.push_back(t);
    s.live_bytes.push_back(static_cast<uint64_t>(std::max(0.0, value(t))));
  }
  return s;
}

reports::GrowthFit fit(const Series& s) { return reports::fit_growth(s.t_s, s.live_bytes, reports::GrowthOptions{}); }

}  // namespace

TEST_CASE("growth: a steady leak is listed at its rate") {
  // 1 MiB every 0.1 s, snapshots every 0.02 s: a staircase of 50 steps over 5 s.
  const auto s = make(250, 0.02, [](double t) { return std::floor(t / 0.1 + 1) * kMiB; });
  const auto f = fit(s);
  CHECK(f.steady);
  CHECK(f.bytes_per_s == Approx(10 * kMiB).epsilon(0.02));
  CHECK(f.r_squared > 0.99);
  CHECK(f.window_start == 0);
}

TEST_CASE("growth: a constant buffer is not growth") {
  const auto s = make(250, 0.02, [](double) { return 64 * kMiB; });
  CHECK_FALSE(fit(s).steady);
  // Allocated a while after the start: the window begins with it, and is flat.
  const auto late = make(250, 0.02, [](double t) { return t < 1.3 ? 0 : 64 * kMiB; });
  const auto f = fit(late);
  CHECK_FALSE(f.steady);
  CHECK(f.window_start == 65);
}

TEST_CASE("growth: one-off bursts on top of a buffer are not growth") {
  for (double at : {0.5, 1.7, 2.5, 4.0}) {
    INFO("burst at " << at << " s");
    const auto step = make(250, 0.02, [&](double t) { return 8 * kMiB + (t < at ? 0 : 32 * kMiB); });
    const auto f = fit(step);
    CHECK_FALSE(f.steady);
    CHECK(f.max_step_share >= 0.5);  // one segment step holds at least half of the rise
  }
  const auto two = make(250, 0.02, [](double t) { return 8 * kMiB + (t < 1.6 ? 0 : 16 * kMiB) + (t < 3.3 ? 0 : 16 * kMiB); });
  CHECK_FALSE(fit(two).steady);
}

TEST_CASE("growth: a cache that filled up and stays full is not growth") {
  const auto s = make(250, 0.02, [](double t) { return std::min(t, 2.0) * 8 * kMiB + 1; });
  const auto f = fit(s);
  CHECK_FALSE(f.steady);
  CHECK(f.late_slope_share < 1.0 / 3);
}

TEST_CASE("growth: churn around a level is not growth") {
  std::mt19937_64 random(12);
  std::uniform_real_distribution<double> level(16 * kMiB, 48 * kMiB);
  const auto s = make(250, 0.02, [&](double) { return level(random); });
  CHECK_FALSE(fit(s).steady);
}

TEST_CASE("growth: a noisy steady leak is still listed, at its rate") {
  // 2 MiB/s over 5 s with churn of 1 MiB standard deviation (10 % of the 10 MiB rise).
  std::mt19937_64 random(7);
  std::normal_distribution<double> noise(0, 1 * kMiB);
  const auto s = make(250, 0.02, [&](double t) { return 4 * kMiB + 2 * kMiB * t + noise(random); });
  const auto f = fit(s);
  CHECK(f.steady);
  CHECK(f.bytes_per_s == Approx(2 * kMiB).epsilon(0.1));
}

TEST_CASE("growth: too few snapshots or too little growth are not judged") {
  const auto short_series = make(6, 1.0, [](double t) { return (t + 1) * kMiB; });
  CHECK_FALSE(fit(short_series).steady);
  const auto tiny = make(250, 0.02, [](double t) { return 1000 + t * 1000; });  // 5 KB over the run
  CHECK_FALSE(fit(tiny).steady);
}

TEST_CASE("growth: the window starts after the stack last held nothing") {
  // A temporary early on, freed in full; then a steady leak from 2 s.
  const auto s = make(250, 0.02, [](double t) { return t < 0.5 ? 4 * kMiB : t < 2.0 ? 0 : (t - 2.0) * 4 * kMiB + kMiB; });
  const auto f = fit(s);
  CHECK(f.steady);
  CHECK(f.window_start == 100);
  CHECK(f.bytes_per_s == Approx(4 * kMiB).epsilon(0.05));
  // Given back in full at the end: nothing is growing now.
  auto freed = make(250, 0.02, [](double t) { return (t + 1) * kMiB; });
  freed.live_bytes.back() = 0;
  CHECK_FALSE(fit(freed).steady);
}

TEST_CASE("growth aggregator: fastest first, bounded snapshots, rate kept through thinning") {
  reports::GrowthOptions options;
  options.max_snapshots = 64;
  options.initial_interval_s = 0.01;
  reports::GrowthAggregator growth(options);
  reports::StackLiveBytesReplay replay;
  replay.add(1, 32 << 20);  // stack 1: a constant buffer
  // 100 s of events every 1 ms: stack 2 leaks 1 KiB per ms, stack 3 256 B per ms, stack 4
  // churns a 1 MiB block, stack 5 gets a burst at 30 s.
  for (int ms = 0; ms < 100'000; ++ms) {
    const double t = ms / 1000.0;
    replay.add(2, 1024);
    replay.add(3, 256);
    replay.add(4, ms % 2 ? -(1 << 20) : (1 << 20));
    if (ms == 30'000) replay.add(5, 64 << 20);
    replay.tick(t, growth);
  }
  replay.flush(100.0, growth);
  CHECK(growth.snapshots() <= 64);
  CHECK(growth.snapshots() >= 32);
  CHECK(growth.interval_s() >= 100.0 / 64);
  CHECK(growth.times_s().back() == 100.0);  // the run's end is held
  const auto listed = growth.growing();
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].stack == 2);
  CHECK(listed[0].bytes_per_s == Approx(1024 * 1000).epsilon(0.02));
  CHECK(listed[0].live_bytes == 100'000ull * 1024);
  CHECK(listed[0].series.size() == growth.snapshots());
  CHECK(listed[1].stack == 3);
  CHECK(listed[1].bytes_per_s == Approx(256 * 1000).epsilon(0.02));

  // Finished (the analysis lets the series go): the same stacks, rates and series.
  growth.finish();
  const auto after = growth.growing();
  REQUIRE(after.size() == listed.size());
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].stack == listed[i].stack);
    CHECK(after[i].bytes_per_s == listed[i].bytes_per_s);
    CHECK(after[i].series.size() == listed[i].series.size());
  }
  CHECK(growth.snapshots() == listed[0].series.size());
}

TEST_CASE("growth aggregator: whole snapshots set the stacks they leave out to nothing") {
  reports::GrowthOptions options;
  options.initial_interval_s = 1.0;
  reports::GrowthAggregator growth(options);
  for (int s = 0; s < 20; ++s) {
    std::vector<reports::StackLiveBytes> holding{{7, static_cast<uint64_t>(s + 1) << 20}};
    if (s < 10) holding.push_back({8, static_cast<uint64_t>(s + 1) << 20});  // freed in full at 10 s
    growth.snapshot(s, holding);
  }
  const auto listed = growth.growing();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].stack == 7);
  CHECK(listed[0].bytes_per_s == Approx(1 << 20));
  CHECK(listed[0].series[15].live_bytes == 16u << 20);
  // A feeder more frequent than the spacing: a snapshot less than an interval after the
  // one before replaces the last, so that the latest values are held and spacing stays even.
  growth.snapshot(19.5, std::vector<reports::StackLiveBytes>{{7, 21u << 20}});
  CHECK(growth.snapshots() == 21);
  growth.snapshot(19.8, std::vector<reports::StackLiveBytes>{{7, 22u << 20}});
  CHECK(growth.snapshots() == 21);
  CHECK(growth.times_s().back() == 19.8);
  CHECK(growth.growing()[0].live_bytes == 22u << 20);
}

TEST_CASE("growth aggregator: a stack that held nothing at a snapshot gets no series") {
  reports::GrowthOptions options;
  options.initial_interval_s = 1.0;
  reports::GrowthAggregator growth(options);
  reports::StackLiveBytesReplay replay;
  for (int s = 0; s < 20; ++s) {
    replay.add(3, 4096);  // stack 3: a block allocated and freed between two snapshots
    replay.add(3, -4096);
    if (s >= 10) replay.add(4, 1 << 20);  // stack 4: does the same for 10 s, then leaks
    else {
      replay.add(4, 4096);
      replay.add(4, -4096);
    }
    replay.flush(s, growth);
  }
  CHECK(growth.stacks_held() == 1);
  const auto listed = growth.growing();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].stack == 4);
  REQUIRE(listed[0].series.size() == 20);
  CHECK(listed[0].series[9].live_bytes == 0);  // nothing held before it was first held
  CHECK(listed[0].series[10].live_bytes == 1u << 20);
  CHECK(listed[0].series[19].live_bytes == 10u << 20);
}
