// Sample mode's set of sampled live blocks (profiler/preload/sampled_blocks.h): a block
// added is found once at its free and then forgotten, whatever else shares its bucket of
// the filter; a block never added is never taken; freed slots are reused; a full
// neighbourhood refuses the block rather than losing one; and threads adding and taking at
// once leave every bucket at zero.
#include "profiler/preload/sampled_blocks.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

using memstage::preload::SampledBlocks;

namespace {

// Addresses as glibc returns them: 16-byte aligned, in a heap mapped far from zero.
constexpr uint64_t kHeap = 0x5555'5555'0000ull;
// Two addresses this far apart share the filter's bucket (its index is bits 4-15).
constexpr uint64_t kSameBucketStride = uint64_t{SampledBlocks::kBuckets} * 16;

std::unique_ptr<SampledBlocks> started_blocks() {
  auto blocks = std::make_unique<SampledBlocks>();
  REQUIRE(blocks->init());
  return blocks;
}

}  // namespace

using Taken = memstage::preload::SampledBlocks::Taken;

TEST_CASE("sampled blocks: an added block is taken once at its free, then forgotten", "[sampled_blocks]") {
  auto blocks = started_blocks();
  const uint64_t block = kHeap + 0x40;
  CHECK_FALSE(blocks->may_hold(block));
  CHECK(blocks->take(block) == Taken::kNone);
  REQUIRE(blocks->add(block));
  CHECK(blocks->may_hold(block));
  CHECK(blocks->take(block) == Taken::kOwn);
  CHECK_FALSE(blocks->may_hold(block));
  CHECK(blocks->take(block) == Taken::kNone);
}

TEST_CASE("sampled blocks: in a forked child, the blocks sampled before the fork are taken as inherited",
          "[sampled_blocks]") {
  auto blocks = started_blocks();
  const uint64_t parents = kHeap + 0x40, also_parents = parents + kSameBucketStride, childs = kHeap + 0x80;
  REQUIRE(blocks->add(parents));
  REQUIRE(blocks->add(also_parents));
  blocks->mark_inherited();
  REQUIRE(blocks->add(childs));
  CHECK(blocks->take(also_parents) == Taken::kInherited);
  CHECK(blocks->take(childs) == Taken::kOwn);
  CHECK(blocks->take(parents) == Taken::kInherited);
  CHECK(blocks->take(parents) == Taken::kNone);
  CHECK_FALSE(blocks->may_hold(parents));
}

TEST_CASE("sampled blocks: blocks sharing a bucket are each found, and a stranger in it is not", "[sampled_blocks]") {
  auto blocks = started_blocks();
  const uint64_t first = kHeap + 0x1230;
  const uint64_t second = first + kSameBucketStride;
  const uint64_t stranger = first + 2 * kSameBucketStride;
  REQUIRE(blocks->add(first));
  REQUIRE(blocks->add(second));
  // The filter cannot tell the stranger apart; the table can.
  CHECK(blocks->may_hold(stranger));
  CHECK(blocks->take(stranger) == Taken::kNone);
  CHECK(blocks->take(second) == Taken::kOwn);
  CHECK(blocks->may_hold(first));
  CHECK(blocks->take(first) == Taken::kOwn);
  CHECK_FALSE(blocks->may_hold(first));
  CHECK_FALSE(blocks->may_hold(second));
}

TEST_CASE("sampled blocks: a slot freed by a take is used again", "[sampled_blocks]") {
  auto blocks = started_blocks();
  // Far more adds than the table has slots, each taken before the next: only reuse of
  // the freed slots lets every one in.
  uint64_t refused = 0;
  for (uint64_t i = 0; i < 4 * SampledBlocks::kSlots; ++i) {
    const uint64_t block = kHeap + (i % 97) * 16;
    if (!blocks->add(block)) {
      ++refused;
      continue;
    }
    if (blocks->take(block) != Taken::kOwn) FAIL("block " << block << " added but not taken");
  }
  CHECK(refused == 0);
}

TEST_CASE("sampled blocks: a full table refuses blocks, and loses none it took", "[sampled_blocks]") {
  auto blocks = started_blocks();
  std::vector<uint64_t> added;
  uint64_t refused = 0;
  for (uint64_t i = 0; i < SampledBlocks::kSlots + 4096; ++i) {
    const uint64_t block = kHeap + i * 48;
    if (blocks->add(block)) {
      added.push_back(block);
    } else {
      ++refused;
    }
  }
  CHECK(refused >= 4096);
  CHECK(added.size() <= SampledBlocks::kSlots);
  for (uint64_t block : added) {
    if (blocks->take(block) != Taken::kOwn) FAIL("block " << block << " added but not taken");
  }
  for (uint64_t block : added) {
    if (blocks->may_hold(block)) FAIL("block " << block << "'s bucket still counts after every take");
  }
}

TEST_CASE("sampled blocks: threads adding and taking at once leave every bucket at zero", "[sampled_blocks]") {
  auto blocks = started_blocks();
  constexpr int kThreads = 4;
  constexpr uint64_t kRounds = 200'000;
  std::vector<std::thread> threads;
  std::vector<uint64_t> lost(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread its own blocks, interleaved with the others' in the same buckets.
      for (uint64_t i = 0; i < kRounds; ++i) {
        const uint64_t block = kHeap + ((i % 512) * kThreads + t) * kSameBucketStride / 64;
        if (blocks->add(block) && blocks->take(block) != Taken::kOwn) ++lost[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) CHECK(lost[t] == 0);
  for (uint64_t i = 0; i < 512 * kThreads; ++i) {
    const uint64_t block = kHeap + i * kSameBucketStride / 64;
    if (blocks->may_hold(block)) FAIL("bucket of " << block << " still counts");
  }
}
