// StacksAtPeaks::run_peak_top: the stacks holding most at the run's peak, summed over their
// stage instances from the list by key, bounded to the top, most first.
#include <catch2/catch.hpp>

#include "reports/analysis/peak_snapshots.h"

using namespace memstage::reports;

namespace {

// run_peak from (stack, stage, bytes, blocks) rows, and its keys and bytes sorted by key.
struct RunPeak {
  StacksAtPeaks at_peaks;
  std::vector<std::pair<uint64_t, uint64_t>> live_by_key;
};
RunPeak run_peak(std::initializer_list<std::tuple<uint32_t, int32_t, uint64_t, uint64_t>> rows) {
  RunPeak r;
  for (const auto& [stack, stage, bytes, blocks] : rows) {
    r.at_peaks.run_peak[figure_key(stack, stage)] = StackBytes{stack, bytes, blocks};
    r.live_by_key.emplace_back(figure_key(stack, stage), bytes);
  }
  std::sort(r.live_by_key.begin(), r.live_by_key.end());
  return r;
}

}  // namespace

TEST_CASE("run peak top: a stack's stage instances add up, the most bytes first, bounded") {
  const RunPeak r = run_peak({{5, -1, 100, 1}, {5, 2, 300, 3}, {9, 0, 500, 5}, {2, -1, 50, 2}, {7, 1, 400, 4}});
  const auto top = r.at_peaks.run_peak_top(r.live_by_key, 2);
  REQUIRE(top.size() == 2);
  CHECK(top[0].stack == 9);
  CHECK(top[0].bytes == 500);
  CHECK(top[1].stack == 5);  // 100 + 300 over two stage instances
  CHECK(top[1].bytes == 400);
  CHECK(top[1].blocks == 4);

  const auto all = r.at_peaks.run_peak_top(r.live_by_key, 20);
  REQUIRE(all.size() == 4);
  CHECK(all[2].stack == 7);  // 400 bytes as stack 5: the lower stack first
  CHECK(all[1].stack == 5);
  CHECK(all[3].stack == 2);
}

TEST_CASE("run peak top: a stack holding only empty blocks comes last, by its own stack") {
  const RunPeak r = run_peak({{4, -1, 0, 3}, {8, 0, 64, 1}});
  const auto top = r.at_peaks.run_peak_top(r.live_by_key, 20);
  REQUIRE(top.size() == 2);
  CHECK(top[0].stack == 8);
  CHECK(top[1].stack == 4);  // not stack 0, the empty stack
  CHECK(top[1].blocks == 3);
  CHECK(r.at_peaks.run_peak_top({}, 20).empty());
}
