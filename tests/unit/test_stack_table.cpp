// The tracer's stack tree (profiler/preload/stack_table.h): prefixes stored once, ids that
// never change, the per-thread last-stack cache compared frame by frame, and interning
// from many threads at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "profiler/preload/stack_table.h"

using memstage::preload::LastStack;
using memstage::preload::StackTable;

namespace {

// The stack of node `id`, innermost frame first, read back from the tree.
std::vector<uint64_t> read_back(const StackTable& table, uint32_t id) {
  std::vector<uint64_t> frames;
  for (; id != StackTable::kRootId; id = table.parent(id)) frames.push_back(table.return_address(id));
  return frames;
}

uint32_t intern(StackTable& table, const std::vector<uint64_t>& frames) {
  return table.intern_stack(frames.data(), static_cast<uint32_t>(frames.size()));
}

// The same through a thread's last-stack cache.
uint32_t intern(LastStack& last, StackTable& table, const std::vector<uint64_t>& frames) {
  return last.intern(table, frames.data(), static_cast<uint32_t>(frames.size()));
}

}  // namespace

TEST_CASE("stacks that share their outer frames store them once") {
  StackTable table;
  REQUIRE(table.init());
  REQUIRE(table.published() == 1);  // the root
  const std::vector<uint64_t> a = {0x11, 0x400, 0x300, 0x200, 0x100};  // innermost first
  const std::vector<uint64_t> b = {0x22, 0x400, 0x300, 0x200, 0x100};
  const std::vector<uint64_t> c = {0x33, 0x300, 0x200, 0x100};
  const uint32_t ia = intern(table, a);
  CHECK(table.published() == 1 + 5);
  const uint32_t ib = intern(table, b);
  CHECK(table.published() == 1 + 5 + 1);  // only b's innermost frame is new
  const uint32_t ic = intern(table, c);
  CHECK(table.published() == 1 + 5 + 1 + 1);
  CHECK(ia != ib);
  CHECK(table.parent(ia) == table.parent(ib));
  CHECK(table.parent(table.parent(ia)) == table.parent(ic));
  CHECK(read_back(table, ia) == a);
  CHECK(read_back(table, ib) == b);
  CHECK(read_back(table, ic) == c);
  // A stack that is another's outer part is that one's parent node.
  CHECK(intern(table, {0x400, 0x300, 0x200, 0x100}) == table.parent(ia));
  CHECK(intern(table, {}) == StackTable::kRootId);
}

TEST_CASE("stack ids stay the same while the table grows") {
  StackTable table;
  REQUIRE(table.init());
  const std::vector<uint64_t> first = {0xa1, 0xa2, 0xa3};
  const uint32_t id = intern(table, first);
  // Enough distinct stacks to grow the index several times and fill more than one block.
  std::vector<uint32_t> ids;
  for (uint64_t i = 0; i < 3 * StackTable::kBlockNodes; ++i) ids.push_back(intern(table, {0x1000 + i, 0xa3}));
  CHECK(table.published() > 3 * StackTable::kBlockNodes);
  CHECK(intern(table, first) == id);
  CHECK(read_back(table, id) == first);
  for (uint64_t i = 0; i < ids.size(); i += 997) {
    CHECK(intern(table, {0x1000 + i, 0xa3}) == ids[i]);
    CHECK(read_back(table, ids[i]) == std::vector<uint64_t>{0x1000 + i, 0xa3});
  }
}

TEST_CASE("the last-stack cache compares whole frames") {
  StackTable table;
  REQUIRE(table.init());
  LastStack last;
  auto via_cache = [&](const std::vector<uint64_t>& frames) { return intern(last, table, frames); };
  const uint32_t x = via_cache({0x10, 0x20, 0x30, 0x40});
  CHECK(via_cache({0x10, 0x20, 0x30, 0x40}) == x);
  // The same innermost frames from another caller: a different stack.
  const uint32_t y = via_cache({0x10, 0x20, 0x30, 0x41});
  CHECK(y != x);
  CHECK(read_back(table, y) == std::vector<uint64_t>{0x10, 0x20, 0x30, 0x41});
  // Deeper and shallower than the last one, sharing its outer frames.
  CHECK(via_cache({0x10, 0x20, 0x30, 0x40}) == x);
  const uint32_t deeper = via_cache({0x05, 0x10, 0x20, 0x30, 0x40});
  CHECK(table.parent(deeper) == x);
  CHECK(via_cache({0x30, 0x40}) == table.parent(table.parent(x)));
  CHECK(via_cache({}) == StackTable::kRootId);
  CHECK(via_cache({0x10, 0x20, 0x30, 0x40}) == x);
  // The cache and the table agree.
  CHECK(intern(table, {0x05, 0x10, 0x20, 0x30, 0x40}) == deeper);
}

TEST_CASE("stacks met before the last one come back with their ids and no new nodes") {
  StackTable table;
  REQUIRE(table.init());
  LastStack last;
  auto via_cache = [&](const std::vector<uint64_t>& frames) { return intern(last, table, frames); };
  // Many paths that differ at the outermost frame, so the last stack shares nothing with
  // the next: each comes back through the thread's node cache or the table.
  std::vector<uint32_t> ids;
  for (uint64_t i = 0; i < 3000; ++i) ids.push_back(via_cache({0x10, 0x20 + i % 7, 0x30, 0x1000 + i}));
  const uint32_t nodes = table.published();
  CHECK(nodes == 1 + 3000 * 4);
  for (uint64_t i = 0; i < 3000; i += 1) CHECK(via_cache({0x10, 0x20 + i % 7, 0x30, 0x1000 + i}) == ids[i]);
  CHECK(table.published() == nodes);
  // The same frames under another outermost caller are other nodes, however the cache is hit.
  for (uint64_t i = 0; i < 3000; i += 3) {
    const uint32_t other = via_cache({0x10, 0x20 + i % 7, 0x30, 0x1000 + (i + 1) % 3000 + 3000});
    CHECK(other != ids[i]);
    CHECK(read_back(table, other) == std::vector<uint64_t>{0x10, 0x20 + i % 7, 0x30, 0x1000 + (i + 1) % 3000 + 3000});
  }
  // What the cache returns is what the table holds.
  for (uint64_t i = 0; i < 3000; i += 11) {
    CHECK(intern(table, {0x10, 0x20 + i % 7, 0x30, 0x1000 + i}) == ids[i]);
    CHECK(read_back(table, ids[i]) == std::vector<uint64_t>{0x10, 0x20 + i % 7, 0x30, 0x1000 + i});
  }
}

TEST_CASE("a chain interned under one lock gives each frame's node, outermost first") {
  StackTable table;
  REQUIRE(table.init());
  const uint32_t shared = intern(table, {0x300, 0x200, 0x100});
  const std::vector<uint64_t> frames = {0x11, 0x22, 0x300, 0x200, 0x100};  // innermost first
  uint32_t ids[5] = {};
  const uint32_t id = table.intern_chain(StackTable::kRootId, frames.data(), 5, ids);
  CHECK(table.published() == 1 + 3 + 2);  // the three known frames found, two added
  CHECK(ids[2] == shared);
  CHECK(ids[4] == id);
  CHECK(table.parent(ids[3]) == shared);
  CHECK(read_back(table, id) == frames);
  CHECK(intern(table, frames) == id);
  CHECK(table.intern_chain(StackTable::kRootId, frames.data(), 0, nullptr) == StackTable::kRootId);
}

TEST_CASE("eight threads interning overlapping stacks at once get one id per stack") {
  StackTable table;
  REQUIRE(table.init());
  // Stacks that share outer frames in many ways: a random walk over a small call graph.
  std::mt19937_64 random(42);
  std::vector<std::vector<uint64_t>> stacks(2000);
  for (auto& s : stacks) {
    const size_t depth = 1 + random() % 40;
    for (size_t i = 0; i < depth; ++i) s.push_back(0x1000 + random() % (i < 30 ? 4 : 64) * 16 + i * 4096);
  }
  constexpr int kThreads = 8;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(stacks.size()));
  std::vector<char> id_changed(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LastStack last;  // each thread's own, as in the tracer
      std::mt19937_64 shuffle_random(t);
      std::vector<size_t> order(stacks.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      for (int round = 0; round < 5; ++round) {
        std::shuffle(order.begin(), order.end(), shuffle_random);
        for (const size_t i : order) {
          const auto& s = stacks[i];
          const uint32_t id = last.intern(table, s.data(), static_cast<uint32_t>(s.size()));
          if (round == 0) {
            ids[t][i] = id;
          } else if (ids[t][i] != id) {
            id_changed[t] = 1;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  for (int t = 0; t < kThreads; ++t) CHECK(id_changed[t] == 0);
  std::set<std::vector<uint64_t>> distinct_prefixes;  // outermost parts: one node each
  for (const auto& s : stacks) {
    for (size_t n = 1; n <= s.size(); ++n) distinct_prefixes.emplace(s.end() - n, s.end());
  }
  CHECK(table.published() == 1 + distinct_prefixes.size());
  for (size_t i = 0; i < stacks.size(); ++i) {
    for (int t = 1; t < kThreads; ++t) REQUIRE(ids[t][i] == ids[0][i]);
    REQUIRE(read_back(table, ids[0][i]) == stacks[i]);
  }
}

namespace {
// Interns {0x1000 + i, tag} for i in [from, to), returning their ids.
std::vector<uint32_t> intern_run(StackTable& table, uint64_t from, uint64_t to, uint64_t tag) {
  std::vector<uint32_t> ids;
  for (uint64_t i = from; i < to; ++i) ids.push_back(intern(table, {0x1000 + i, tag}));
  return ids;
}
void check_run(StackTable& table, const std::vector<uint32_t>& ids, uint64_t from, uint64_t tag) {
  for (uint64_t i = 0; i < ids.size(); i += 101) {
    REQUIRE(intern(table, {0x1000 + from + i, tag}) == ids[i]);
    REQUIRE(read_back(table, ids[i]) == std::vector<uint64_t>{0x1000 + from + i, tag});
  }
}
// A table with a helper, filled until an index large enough for the helper is 3/4 full:
// its growth is then asked of the helper. `ids` of stacks {0x1000 + i, 0xa3}, i < next.
struct GrowthAsked {
  StackTable table;
  std::vector<uint32_t> ids;
  uint64_t next = 0;
  GrowthAsked() {
    REQUIRE(table.init());
    table.set_growth_helper(true);
    while (!table.growth_wanted()) add();
  }
  void add() { ids.push_back(intern(table, {0x1000 + next++, 0xa3})); }
};
}  // namespace

TEST_CASE("with a helper, the index grows from what the helper built and the nodes added since") {
  GrowthAsked t;
  const uint32_t nodes_when_asked = t.table.published();
  // Slices of the next index, with nodes added between them, then the last: it grows.
  CHECK(t.table.build_ahead());
  for (int k = 0; k < 1000; ++k) t.add();
  CHECK(t.table.growth_wanted());
  while (t.table.build_ahead()) t.add();
  CHECK_FALSE(t.table.growth_wanted());
  CHECK(t.table.published() > nodes_when_asked + 1000);
  // Every node is in the new index: found, not added again.
  const uint32_t nodes = t.table.published();
  check_run(t.table, t.ids, 0, 0xa3);
  CHECK(t.table.published() == nodes);
  // And it goes on growing.
  const auto more = intern_run(t.table, t.next, t.next + 600000, 0xa3);
  check_run(t.table, t.ids, 0, 0xa3);
  check_run(t.table, more, t.next, 0xa3);
}

TEST_CASE("without the helper's work, the index grows at 7/8 from what it built") {
  GrowthAsked t;
  CHECK(t.table.build_ahead());  // one slice, then the helper stops
  // Past 7/8 the growth is made under the lock, from the slice on (a table that did not
  // grow would name these stacks by the root).
  const auto more = intern_run(t.table, t.next, t.next + 300000, 0xa3);
  check_run(t.table, t.ids, 0, 0xa3);
  check_run(t.table, more, t.next, 0xa3);
}

TEST_CASE("a fork's child drops the next index the parent's helper was building") {
  GrowthAsked t;
  CHECK(t.table.build_ahead());
  t.table.reset_lock_after_fork();  // as in the child: no helper, nothing half built
  CHECK_FALSE(t.table.growth_wanted());
  CHECK_FALSE(t.table.build_ahead());
  const auto more = intern_run(t.table, t.next, t.next + 300000, 0xa3);
  CHECK_FALSE(t.table.growth_wanted());
  check_run(t.table, t.ids, 0, 0xa3);
  check_run(t.table, more, t.next, 0xa3);
}

namespace {
// Four threads add 1.6 M nodes (the index grows a dozen times while they look nodes up
// without the lock), with a helper thread building the next index or without one (the
// growth under the lock then moves the old index's pages to the new one).
void add_from_four_threads(bool with_helper) {
  StackTable table;
  REQUIRE(table.init());
  table.set_growth_helper(with_helper);
  std::atomic<bool> stop{false};
  std::thread helper([&] {
    while (with_helper && !stop.load()) {
      if (!table.build_ahead()) std::this_thread::yield();
    }
  });
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 400000;
  std::vector<std::vector<uint32_t>> ids(kThreads);
  std::vector<std::thread> adders;
  for (int t = 0; t < kThreads; ++t) {
    adders.emplace_back([&, t] {
      // Each thread's own stacks, and one path all of them share.
      for (uint64_t i = 0; i < kPerThread; ++i) {
        ids[t].push_back(intern(table, {0x1000 + i, 0xb000 + static_cast<uint64_t>(t)}));
        if (i % 1000 == 0) intern(table, {0x77, 0x88});
      }
    });
  }
  for (auto& a : adders) a.join();
  stop = true;
  helper.join();
  // The root, the shared path's two nodes, and two nodes a stack for each thread's own.
  CHECK(table.published() == 1 + 2 + kThreads * (kPerThread + 1));
  for (int t = 0; t < kThreads; ++t) check_run(table, ids[t], 0, 0xb000 + static_cast<uint64_t>(t));
}
}  // namespace

TEST_CASE("four threads add nodes while a helper thread grows the index") { add_from_four_threads(true); }

TEST_CASE("four threads add nodes while the index grows under the lock") { add_from_four_threads(false); }
