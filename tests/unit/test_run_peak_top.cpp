// StacksAtPeaks::run_peak_top: the stacks holding most at the run's peak, summed over their
// stage instances from the list by key, bounded to the top, most first.
#include <catch2/catch.hpp>

#include "reports/analysis/peak_snapshots.h"

using namespace memstage::reports;

namespace {

// run_peak from (stack, stage, bytes, blocks) rows, sorted by key.
StacksAtPeaks run_peak(std::initializer_list<std::tuple<uint32_t, int32_t, uint64_t, uint64_t>> rows) {
  StacksAtPeaks r;
  for (const auto& [stack, stage, bytes, blocks] : rows) {
    r.run_peak.push_back(StacksAtPeaks::KeyedLive{figure_key(stack, stage), bytes, blocks});
  }
  std::sort(r.run_peak.begin(), r.run_peak.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return r;
}

}  // namespace

TEST_CASE("run peak top: a stack's stage instances add up, the most bytes first, bounded") {
  const StacksAtPeaks r = run_peak({{5, -1, 100, 1}, {5, 2, 300, 3}, {9, 0, 500, 5}, {2, -1, 50, 2}, {7, 1, 400, 4}});
  const auto top = r.run_peak_top(2);
  REQUIRE(top.size() == 2);
  CHECK(top[0].stack == 9);
  CHECK(top[0].bytes == 500);
  CHECK(top[1].stack == 5);  // 100 + 300 over two stage instances
  CHECK(top[1].bytes == 400);
  CHECK(top[1].blocks == 4);

  const auto all = r.run_peak_top(20);
  REQUIRE(all.size() == 4);
  CHECK(all[2].stack == 7);  // 400 bytes as stack 5: the lower stack first
  CHECK(all[1].stack == 5);
  CHECK(all[3].stack == 2);
}

TEST_CASE("run peak top: a stack holding only empty blocks comes last, by its own stack") {
  const StacksAtPeaks r = run_peak({{4, -1, 0, 3}, {8, 0, 64, 1}});
  const auto top = r.run_peak_top(20);
  REQUIRE(top.size() == 2);
  CHECK(top[0].stack == 8);
  CHECK(top[1].stack == 4);  // not stack 0, the empty stack
  CHECK(top[1].blocks == 3);
  CHECK(StacksAtPeaks{}.run_peak_top(20).empty());
}

TEST_CASE("count run peak: held infos by key, sorted, a key's infos and split counts added up") {
  AllocationInfos infos;
  infos.define(0, allocation_info(16, 7, 2, 0));
  infos.define(1, allocation_info(100, 3, -1, 0));
  infos.define(2, allocation_info(8, 7, -1, 0));
  infos.define(3, allocation_info(4, 7, 2, 0));  // the same key as info 0
  infos.define(4, allocation_info(1, 5, 0, 0));  // holds nothing at the peak
  StacksAtPeaks at_peaks;
  at_peaks.run_peak_blocks = {{0, 2}, {1, 1}, {2, UINT32_MAX}, {2, 1}, {3, 5}};
  at_peaks.count_run_peak(infos);
  CHECK(at_peaks.run_peak_blocks.empty());
  REQUIRE(at_peaks.run_peak.size() == 3);
  CHECK(at_peaks.run_peak[0].key == figure_key(3, -1));
  CHECK(at_peaks.run_peak[0].bytes == 100);
  CHECK(at_peaks.run_peak[1].key == figure_key(7, -1));
  CHECK(at_peaks.run_peak[1].blocks == uint64_t{UINT32_MAX} + 1);
  CHECK(at_peaks.run_peak[1].bytes == (uint64_t{UINT32_MAX} + 1) * 8);
  CHECK(at_peaks.run_peak[2].key == figure_key(7, 2));
  CHECK(at_peaks.run_peak[2].bytes == 2 * 16 + 5 * 4);
  CHECK(at_peaks.run_peak[2].blocks == 7);
}

TEST_CASE("count run peak: no held blocks leaves run_peak as it is (aggregate mode's)") {
  StacksAtPeaks at_peaks = run_peak({{4, -1, 10, 1}});
  at_peaks.count_run_peak(AllocationInfos{});
  REQUIRE(at_peaks.run_peak.size() == 1);
  CHECK(at_peaks.run_peak[0].bytes == 10);
}
