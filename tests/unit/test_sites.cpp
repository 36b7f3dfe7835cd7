// SiteAggregator: counts per allocation info become figures per (stack, stage instance) at
// the events' end, in one list by key; later figures (leaks, the peak) land on those sites.
#include <catch2/catch.hpp>

#include "reports/analysis/live_heap.h"
#include "reports/analysis/sites.h"

using namespace memstage::reports;

namespace {

AllocationInfo info(uint64_t size, uint32_t stack, int32_t stage) {
  AllocationInfo i;
  i.size = size;
  i.stack = stack;
  i.stage = stage;
  return i;
}

AllocationInfos table(std::initializer_list<AllocationInfo> list) {
  AllocationInfos t;
  uint32_t id = 0;
  for (const AllocationInfo& i : list) t.define(id++, i);
  return t;
}

const StackStageFigures* find(const std::vector<StackStageFigures>& list, uint32_t stack, int stage) {
  for (const auto& f : list) {
    if (f.stack == stack && f.stage == stage) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("infos of one site add up, sites come out sorted by stack and stage") {
  // Infos 0 and 2 are one site (stack 7, stage 1) of two sizes; info 1 is stack 3 outside stages.
  const AllocationInfos infos = table({info(100, 7, 1), info(8, 3, -1), info(40, 7, 1), info(1, 7, 0)});
  SiteAggregator sites;
  sites.allocated_as(0, infos[0]);
  sites.allocated_as(0, infos[0]);
  sites.allocated_as(2, infos[2]);
  sites.temporary_as(2, infos[2]);
  sites.allocated_as(1, infos[1]);
  CHECK(sites.stacks(infos) == std::vector<uint32_t>{3, 7});  // before the list is made: from the counts
  sites.finish(infos);  // info 3 never allocated: no site

  CHECK(sites.stacks(infos) == std::vector<uint32_t>{3, 7});
  sites.leaked(7, 1, 140);
  sites.live_at_peak(std::vector<std::pair<uint64_t, uint64_t>>{{figure_key(3, -1), 8}});
  const auto list = sites.take_by_row([](int stage) { return stage; });
  REQUIRE(list.size() == 2);
  CHECK(list[0].stack == 3);
  CHECK(list[0].allocations == 1);
  CHECK(list[0].live_at_peak_bytes == 8);
  const StackStageFigures* site = find(list, 7, 1);
  REQUIRE(site);
  CHECK(site->allocations == 3);
  CHECK(site->bytes_allocated == 240);
  CHECK(site->temporary_allocations == 1);
  CHECK(site->leaked_bytes == 140);
  CHECK(sites.temporary_allocations() == 1);
}

TEST_CASE("stage instances of one row merge; a site named only after the end is kept") {
  const AllocationInfos infos = table({info(10, 5, 0), info(10, 5, 1), info(10, 5, 2)});
  SiteAggregator sites;
  for (uint32_t id = 0; id < infos.size(); ++id) sites.allocated_as(id, infos[id]);
  sites.finish(infos);
  sites.leaked(9, 4, 64);  // a stack no event named (a damaged trace): kept apart, still listed
  CHECK(sites.stacks(infos) == std::vector<uint32_t>{5, 9});

  // Instances 0 and 2 are the same row (a stage entered twice), 1 another.
  const auto list = sites.take_by_row([](int stage) { return stage == 1 ? 1 : 0; });
  REQUIRE(list.size() == 3);
  CHECK(find(list, 5, 0)->allocations == 2);
  CHECK(find(list, 5, 1)->allocations == 1);
  CHECK(find(list, 9, 0)->leaked_bytes == 64);
  CHECK(list[0].stack == 5);
  CHECK(list[2].stack == 9);
}

TEST_CASE("aggregate mode's figures set before the end are sites like the counted ones") {
  const AllocationInfos infos = table({info(16, 2, -1)});
  SiteAggregator sites;
  sites.set(4, -1, 10, 1000, 3);
  sites.set(4, -1, 12, 1200, 4);  // the latest figures replace the earlier
  sites.allocated_as(0, infos[0]);
  sites.finish(infos);
  sites.live_at_peak(std::vector<std::pair<uint64_t, uint64_t>>{{figure_key(4, -1), 500}});
  const auto list = sites.take_by_row([](int stage) { return stage; });
  REQUIRE(list.size() == 2);
  CHECK(find(list, 4, -1)->allocations == 12);
  CHECK(find(list, 4, -1)->bytes_allocated == 1200);
  CHECK(find(list, 4, -1)->live_at_peak_bytes == 500);
  CHECK(find(list, 2, -1)->bytes_allocated == 16);
}

TEST_CASE("the sites so far, while events still come, are what the end gives for the same counts") {
  const AllocationInfos infos = table({info(32, 1, 0), info(64, 1, 1), info(8, 6, -1)});
  SiteAggregator sites;
  sites.allocated_as(0, infos[0]);
  sites.allocated_as(1, infos[1]);
  sites.temporary_as(2, infos[2]);
  sites.allocated_as(2, infos[2]);
  sites.set(9, -1, 5, 500, 0);
  const auto one_row = [](int) { return 0; };
  const auto so_far = sites.by_row_so_far(infos, one_row);
  sites.allocated_as(2, infos[2]);  // the pass reads on: the list so far is unchanged by it
  REQUIRE(so_far.size() == 3);
  CHECK(find(so_far, 1, 0)->allocations == 2);
  CHECK(find(so_far, 1, 0)->bytes_allocated == 96);
  CHECK(find(so_far, 6, 0)->allocations == 1);
  CHECK(find(so_far, 9, 0)->bytes_allocated == 500);
  sites.finish(infos);
  const auto at_end = sites.take_by_row(one_row);
  CHECK(find(at_end, 6, 0)->allocations == 2);
  CHECK(find(at_end, 1, 0)->allocations == so_far[0].allocations);
}

TEST_CASE("aggregate mode's increments add up; a site's figures so far are read back") {
  SiteAggregator sites;
  sites.add(3, 2, 4, 400, 1);
  sites.add(3, 2, 6, 600, 0);
  CHECK(sites.figures_of(3, 2).allocations == 10);
  CHECK(sites.figures_of(3, 2).bytes_allocated == 1000);
  CHECK(sites.figures_of(8, -1).allocations == 0);  // never met
  sites.finish({});
  CHECK(sites.figures_of(3, 2).temporary_allocations == 1);  // from the sorted list now
  const auto list = sites.take_by_row([](int stage) { return stage; });
  REQUIRE(list.size() == 1);
  CHECK(list[0].allocations == 10);
}

TEST_CASE("finishing twice keeps the sites") {
  const AllocationInfos infos = table({info(16, 1, -1)});
  SiteAggregator sites;
  sites.allocated_as(0, infos[0]);
  sites.finish(infos);
  sites.finish(infos);
  const auto list = sites.take_by_row([](int stage) { return stage; });
  REQUIRE(list.size() == 1);
  CHECK(list[0].allocations == 1);
}

TEST_CASE("the bytes live at the run's peak land on their sites in one walk, a site not listed beside the list") {
  const AllocationInfos infos = table({info(8, 2, -1), info(8, 5, 0), info(8, 9, -1)});
  SiteAggregator sites;
  for (uint32_t id = 0; id < infos.size(); ++id) sites.allocated_as(id, infos[id]);
  sites.finish(infos);
  // Stack 6 allocated nothing: its peak figure still lands, outside the sorted list.
  sites.live_at_peak(std::vector<std::pair<uint64_t, uint64_t>>{
      {figure_key(2, -1), 16}, {figure_key(5, 0), 24}, {figure_key(6, -1), 32}, {figure_key(9, -1), 40}});
  CHECK(sites.figures_of(2, -1).live_at_peak_bytes == 16);
  CHECK(sites.figures_of(5, 0).live_at_peak_bytes == 24);
  CHECK(sites.figures_of(6, -1).live_at_peak_bytes == 32);
  CHECK(sites.figures_of(9, -1).live_at_peak_bytes == 40);
  const auto list = sites.take_by_row([](int stage) { return stage; });
  CHECK(list.size() == 4);
}

TEST_CASE("allocation infos: a sampled info's weight is read back, an exact info weighs 1") {
  AllocationInfos infos;
  infos.define(2, info(16, 4, -1));  // an exact mode's info: no weight held
  CHECK(infos.size() == 3);
  CHECK(infos[2].blocks_per_block == 1);
  CHECK(infos[0].size == 0);  // not defined yet
  AllocationInfo sampled = info(4096, 9, 3);
  sampled.blocks_per_block = 2.5;
  infos.define(5, sampled);
  infos.define(7, info(8, 1, 0));
  const AllocationInfo back = infos[5];
  CHECK(back.size == 4096);
  CHECK(back.stack == 9);
  CHECK(back.stage == 3);
  CHECK(back.blocks_per_block == 2.5);
  CHECK(infos.bytes(5) == 4096);
  for (size_t id : {0, 2, 4, 6, 7}) CHECK(infos[id].blocks_per_block == 1);
  // Defined again (never by the reader, but the table holds the latest).
  infos.define(5, info(4096, 9, 3));
  CHECK(infos[5].blocks_per_block == 1);
  infos.shrink_to_fit();
  CHECK(infos.size() == 8);
  CHECK(infos[7].stack == 1);
}
