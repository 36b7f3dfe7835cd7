// A forked child's table of its own blocks (profiler/preload/own_blocks.h): a block added is
// taken once, an address never added (the child's inheritance) is not; the table grows past
// its first slots and loses none; threads adding and taking at once, and taking each
// other's blocks, find every block they added; a restart in a grandchild forgets them all.
#include "profiler/preload/own_blocks.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

using memstage::preload::OwnBlocks;

namespace {

constexpr uint64_t kHeap = 0x5555'5555'0000ull;  // 16-byte aligned addresses, as glibc's

std::unique_ptr<OwnBlocks> started_table() {
  auto table = std::make_unique<OwnBlocks>();
  CHECK_FALSE(table->active());
  table->start_in_child();
  REQUIRE(table->active());
  return table;
}

}  // namespace

TEST_CASE("own blocks: a block added is taken once; one never added is inherited", "[own_blocks]") {
  auto table = started_table();
  const uint64_t own = kHeap + 0x40, inherited = kHeap + 0x80;
  REQUIRE(table->add(own));
  CHECK_FALSE(table->take(inherited));
  CHECK(table->take(own));
  CHECK_FALSE(table->take(own));
  REQUIRE(table->add(inherited));  // the address used again by the child: its own now
  CHECK(table->take(inherited));
}

TEST_CASE("own blocks: the table grows past its first slots and keeps every block", "[own_blocks]") {
  auto table = started_table();
  constexpr uint64_t kBlocks = 200'000;  // ~3,000 a shard: several doublings of 512 slots
  for (uint64_t i = 0; i < kBlocks; ++i) REQUIRE(table->add(kHeap + 16 * i));
  uint64_t found = 0;
  for (uint64_t i = 0; i < kBlocks; i += 2) found += table->take(kHeap + 16 * i);
  CHECK(found == kBlocks / 2);
  for (uint64_t i = 0; i < kBlocks; ++i) CHECK(table->take(kHeap + 16 * i) == (i % 2 == 1));
  CHECK(table->active());
  CHECK_FALSE(table->take_gave_up());
}

TEST_CASE("own blocks: threads adding and taking, each other's blocks too, lose none", "[own_blocks]") {
  auto table = started_table();
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 50'000;
  std::vector<std::thread> adders;
  for (int t = 0; t < kThreads; ++t) {
    adders.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) table->add(kHeap + 16 * (t * kPerThread + i));
    });
  }
  for (auto& thread : adders) thread.join();
  // Each thread takes the blocks of the next one: a free by another thread than the allocating one.
  std::vector<uint64_t> taken(kThreads, 0);
  std::vector<std::thread> takers;
  for (int t = 0; t < kThreads; ++t) {
    takers.emplace_back([&, t] {
      const int owner = (t + 1) % kThreads;
      for (uint64_t i = 0; i < kPerThread; ++i) taken[t] += table->take(kHeap + 16 * (owner * kPerThread + i));
    });
  }
  for (auto& thread : takers) thread.join();
  for (int t = 0; t < kThreads; ++t) CHECK(taken[t] == kPerThread);
}

TEST_CASE("own blocks: a grandchild's start forgets its parent's own blocks", "[own_blocks]") {
  auto table = started_table();
  REQUIRE(table->add(kHeap));
  table->start_in_child();  // the child forks again: what it allocated is the grandchild's inheritance
  CHECK_FALSE(table->take(kHeap));
}
