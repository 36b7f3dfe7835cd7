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
  for (uint32_t i = 0; i < 600'000; ++i) {  // more than two blocks
    if (i % 3 == 2) {
      log.freed(i / 3);
      expected.emplace_back('f', i / 3);
    } else {
      log.allocated(i);
      expected.emplace_back('a', i);
    }
  }
  CHECK(log.complete());
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
  EventLog bounded(5);
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
