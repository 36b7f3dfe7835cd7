// The analysis's log of alloc and free events (reports/analysis/event_log.h).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "reports/analysis/event_log.h"

using memstage::reports::EventLog;

namespace {

struct Recorder {
  std::vector<std::pair<char, uint32_t>> seen;
  size_t stop_after = SIZE_MAX;
  bool done() const { return seen.size() >= stop_after; }
  void on_alloc(uint32_t info, bool) { seen.emplace_back('a', info); }
  void on_free(uint32_t info, bool) { seen.emplace_back('f', info); }
};

}  // namespace

TEST_CASE("the event log replays allocations and frees in their order, across its blocks") {
  EventLog log;
  std::vector<std::pair<char, uint32_t>> expected;
  for (uint32_t i = 0; i < 1'000'000; ++i) {  // ~3 MB of varints: several blocks
    // Ids of every varint length, 1 to 5 bytes with the free bit.
    const uint32_t info = (i * 2654435761u >> (i % 31)) & 0x7fffffffu;
    if (i % 3 == 2) {
      log.freed(info);
      expected.emplace_back('f', info);
    } else {
      log.allocated(info);
      expected.emplace_back('a', info);
    }
  }
  CHECK(log.complete());
  Recorder r;
  log.replay(r);
  CHECK(r.seen == expected);
}

TEST_CASE("the event log keeps ids at each varint length's edges") {
  EventLog log;
  const std::vector<uint32_t> ids{0, 63, 64, 8191, 8192, (1u << 20) - 1, 1u << 20, (1u << 27) - 1, 1u << 27,
                                  (1u << 31) - 1};
  std::vector<std::pair<char, uint32_t>> expected;
  for (const uint32_t id : ids) {
    log.allocated(id);
    log.freed(id);
    expected.emplace_back('a', id);
    expected.emplace_back('f', id);
  }
  Recorder r;
  log.replay(r);
  CHECK(r.seen == expected);
}

TEST_CASE("the event log stops where its visitor is done") {
  EventLog log;
  for (uint32_t i = 0; i < 10; ++i) log.allocated(i);
  Recorder r;
  r.stop_after = 4;
  log.replay(r);
  CHECK(r.seen.size() == 4);
}

TEST_CASE("past its bound, or with an info id it cannot hold, the log is incomplete and replays nothing") {
  EventLog bounded(9);  // bytes: room for five events of one byte (each needs room for five)
  for (uint32_t i = 0; i < 5; ++i) bounded.allocated(i);
  CHECK(bounded.complete());
  bounded.freed(0);
  CHECK_FALSE(bounded.complete());
  Recorder r;
  bounded.replay(r);
  CHECK(r.seen.empty());

  EventLog large_id;
  large_id.allocated(1u << 31);
  CHECK_FALSE(large_id.complete());
}
