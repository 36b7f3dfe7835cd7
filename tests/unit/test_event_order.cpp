// The events' order across threads (profiler/preload/event_order.h): producers number
// their events as the tracer does (a free takes its number before the block is given back,
// an allocation reads it after the block is handed out) and a consumer merges the rings as
// the writer does. A free must come before every reuse of its address, whichever thread
// reuses it, and each thread's events stay in its order.
#include "profiler/preload/event_order.h"

#include <time.h>

#include <catch2/catch.hpp>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using memstage::preload::EventKind;
using memstage::preload::EventMerge;
using memstage::preload::EventNumbers;
using memstage::preload::EventRing;
using memstage::preload::RawEvent;

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// As the tracer's push_event: the number right before the publish.
void push(EventRing& ring, EventNumbers& numbers, EventKind kind, uint64_t address, uint64_t thread_order) {
  while (!ring.has_room(1)) ring.wait_for_consumer(10'000);
  RawEvent& e = ring.slot_at(0);
  e.seq = memstage::preload::number_event(ring, numbers, kind);
  e.a = address;
  e.b = thread_order;
  e.kind = kind;
  ring.publish(1);
}

// The writer's view of the blocks: what it was told is live.
struct LiveModel {
  std::vector<bool> live;
  std::vector<uint64_t> next_order;  // per ring, the thread_order expected next
  uint64_t written = 0;
  uint64_t wrong = 0;

  void write(uint32_t ring, const RawEvent& e) {
    ++written;
    if (e.b != next_order[ring]++) ++wrong;
    const bool alloc = e.kind == EventKind::kAlloc;
    if (live[e.a] == alloc) ++wrong;  // an allocation of a live address, or a free of a dead one
    live[e.a] = alloc;
  }
};

// One drain as the writer's: horizon, then tails, then the merge.
uint64_t drain(EventMerge& merge, EventNumbers& numbers, std::vector<std::unique_ptr<EventRing>>& rings,
               LiveModel& model, bool final) {
  const auto ring = [&](uint32_t i) -> EventRing& { return *rings[i]; };
  const uint32_t n = static_cast<uint32_t>(rings.size());
  const uint64_t horizon = merge.horizon(merge.fence(numbers), ring, n, now_ns());
  std::vector<uint64_t> heads(n), tails(n);
  for (uint32_t i = 0; i < n; ++i) {
    tails[i] = rings[i]->tail_acquire();
    heads[i] = rings[i]->head();
  }
  const uint64_t given_up =
      merge.merge(ring, n, heads.data(), tails.data(), horizon, numbers.allocations_read, final, now_ns(),
                  [&](uint32_t r, uint64_t index) { model.write(r, rings[r]->at(index)); });
  for (uint32_t i = 0; i < n; ++i) rings[i]->consume_to(heads[i]);
  return given_up;
}

}  // namespace

TEST_CASE("order: an allocation being numbered holds back the events numbered after it", "[event_order]") {
  EventNumbers numbers;
  numbers.allocations_read = memstage::preload::register_thread_fence();
  if (!numbers.allocations_read) {
    WARN("the kernel refuses membarrier: allocations take numbers, nothing to check");
    return;
  }
  std::vector<std::unique_ptr<EventRing>> rings;
  rings.push_back(std::make_unique<EventRing>());
  rings.push_back(std::make_unique<EventRing>());
  LiveModel model{std::vector<bool>(4), std::vector<uint64_t>(2)};
  EventMerge merge;

  push(*rings[1], numbers, EventKind::kAlloc, 1, 0);  // reads 0
  push(*rings[1], numbers, EventKind::kFree, 1, 1);   // takes 0
  // Ring 0 reads its number and is stopped before the publish (preempted, say)...
  RawEvent& pending = rings[0]->slot_at(0);
  pending.seq = rings[0]->read_number(numbers.next);  // reads 1
  pending.a = 1;
  pending.b = 0;
  pending.kind = EventKind::kAlloc;
  // ...while ring 1 frees and reallocates elsewhere.
  push(*rings[1], numbers, EventKind::kAlloc, 2, 2);  // reads 1
  push(*rings[1], numbers, EventKind::kFree, 2, 3);   // takes 1

  CHECK(drain(merge, numbers, rings, model, false) == 0);
  // Ring 0's floor is its previous number, 0: only what is numbered below it is written.
  CHECK(model.written == 0);
  rings[0]->publish(1);
  CHECK(drain(merge, numbers, rings, model, false) == 0);
  // Ring 0's allocation (read 1) goes before ring 1's free that took 1.
  CHECK(model.written == 5);
  CHECK(model.wrong == 0);
  CHECK(model.live[1]);
  CHECK_FALSE(model.live[2]);
}

TEST_CASE("order: a free comes before the reuse of its address, 8 threads on one size class", "[event_order]") {
  const bool reads = GENERATE(false, true);
  EventNumbers numbers;
  if (reads) {
    numbers.allocations_read = memstage::preload::register_thread_fence();
    if (!numbers.allocations_read) {
    WARN("the kernel refuses membarrier: allocations take numbers, nothing to check");
    return;
  }
  }
  constexpr uint32_t kThreads = 8;
  constexpr uint64_t kAddresses = 24;  // the size class: few blocks, reused all the time
  constexpr uint64_t kAllocations = 15'000;
  std::vector<std::unique_ptr<EventRing>> rings;
  for (uint32_t i = 0; i < kThreads; ++i) rings.push_back(std::make_unique<EventRing>());

  // The allocator: one free list under a lock (its unlock is what orders a free before the
  // reuse). Each thread hands its blocks to the next, which frees them.
  std::mutex pool_mutex;
  std::vector<uint64_t> pool;
  for (uint64_t a = 0; a < kAddresses; ++a) pool.push_back(a);
  std::vector<std::mutex> inbox_mutex(kThreads);
  std::vector<std::deque<uint64_t>> inbox(kThreads);

  std::atomic<uint32_t> threads_done{0};
  std::vector<std::thread> producers;
  for (uint32_t t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      uint64_t order = 0;
      // Free what the previous thread handed over: the number first, then the block back.
      const auto free_received = [&] {
        std::deque<uint64_t> received;
        {
          std::lock_guard<std::mutex> lock(inbox_mutex[t]);
          received.swap(inbox[t]);
        }
        for (uint64_t a : received) {
          push(*rings[t], numbers, EventKind::kFree, a, order++);
          std::lock_guard<std::mutex> lock(pool_mutex);
          pool.push_back(a);
        }
      };
      for (uint64_t i = 0; i < kAllocations;) {
        free_received();
        uint64_t a = ~0ull;
        {
          std::lock_guard<std::mutex> lock(pool_mutex);
          if (!pool.empty()) {
            a = pool.back();
            pool.pop_back();
          }
        }
        if (a == ~0ull) {
          std::this_thread::yield();
          continue;
        }
        push(*rings[t], numbers, EventKind::kAlloc, a, order++);  // the block handed out, then the number
        ++i;
        std::lock_guard<std::mutex> lock(inbox_mutex[(t + 1) % kThreads]);
        inbox[(t + 1) % kThreads].push_back(a);
      }
      // The others may still wait for blocks this thread holds.
      threads_done.fetch_add(1);
      while (threads_done.load() < kThreads) {
        free_received();
        std::this_thread::yield();
      }
      free_received();
    });
  }

  LiveModel model{std::vector<bool>(kAddresses), std::vector<uint64_t>(kThreads)};
  EventMerge merge;
  uint64_t given_up = 0;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    while (!done.load(std::memory_order_acquire)) given_up += drain(merge, numbers, rings, model, false);
    given_up += drain(merge, numbers, rings, model, true);
  });
  for (auto& p : producers) p.join();
  done.store(true, std::memory_order_release);
  writer.join();

  uint64_t published = 0;
  for (auto& ring : rings) published += ring->tail();
  CHECK(given_up == 0);
  CHECK(model.written == published);
  CHECK(model.wrong == 0);
}
