// The per-thread event ring (profiler/preload/event_ring.h): what one thread publishes
// another takes in the same order, across the ring's wrap, never overwritten unread; a
// producer waiting for room is woken when it is made; and the CPU feature its write-ahead
// prefetch depends on is read as the kernel reads it.
#include "profiler/preload/event_ring.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

using memstage::preload::EventKind;
using memstage::preload::EventRing;
using memstage::preload::RawEvent;

namespace {

// Whether /proc/cpuinfo lists `flag` for the first CPU.
bool cpuinfo_has_flag(const std::string& flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word) {
      if (word == flag) return true;
    }
    return false;
  }
  return false;
}

}  // namespace

TEST_CASE("ring: room is counted in slots, freed by the consumer", "[event_ring]") {
  auto ring = std::make_unique<EventRing>();
  CHECK(ring->free_slots() == EventRing::kSlots);
  CHECK(ring->has_room(EventRing::kSlots));
  ring->slot_at(0).a = 1;
  ring->publish(EventRing::kSlots - 3);
  CHECK(ring->free_slots() == 3);
  CHECK(ring->has_room(3));
  CHECK_FALSE(ring->has_room(4));
  ring->consume_to(10);
  // The producer looks at the consumer's position again only when its copy leaves too little.
  CHECK(ring->has_room(13));
  CHECK_FALSE(ring->has_room(14));
}

TEST_CASE("ring: a consumer thread takes every event in order across wraps", "[event_ring]") {
  auto ring = std::make_unique<EventRing>();
  constexpr uint64_t kEvents = 5ull * EventRing::kSlots + 123;  // five wraps and a part
  std::thread producer([&] {
    for (uint64_t i = 0; i < kEvents; ++i) {
      while (!ring->has_room(1)) ring->wait_for_consumer(10'000);
      RawEvent& e = ring->slot_at(0);
      e.seq = i;
      e.a = i * 7;
      e.b = ~i;
      e.kind = EventKind::kAlloc;
      ring->publish(1);
      ring->prefetch_ahead_for_write();
    }
  });
  uint64_t next = 0;
  uint64_t wrong = 0;
  while (next < kEvents) {
    const uint64_t tail = ring->tail_acquire();
    for (uint64_t i = ring->head(); i < tail; ++i) {
      const RawEvent& e = ring->at(i);
      if (e.seq != next || e.a != next * 7 || e.b != ~next) ++wrong;
      ++next;
    }
    ring->consume_to(tail);
  }
  producer.join();
  CHECK(wrong == 0);
  CHECK(next == kEvents);
  CHECK(ring->free_slots() == EventRing::kSlots);
}

TEST_CASE("ring: a producer sleeping on a full ring is woken when the consumer makes room", "[event_ring]") {
  auto ring = std::make_unique<EventRing>();
  ring->publish(EventRing::kSlots);
  REQUIRE_FALSE(ring->has_room(1));
  // The consumer moves on well after the producer went to sleep, and well before the
  // sleep's timeout: without the consumer's wake the producer sleeps to the timeout.
  constexpr uint64_t kTimeoutNs = 900'000'000;
  std::thread consumer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ring->consume_to(16);
  });
  const auto start = std::chrono::steady_clock::now();
  while (!ring->has_room(1)) ring->wait_for_consumer(kTimeoutNs);
  const auto waited = std::chrono::steady_clock::now() - start;
  consumer.join();
  CHECK(ring->has_room(16));
  CHECK(waited < std::chrono::nanoseconds(kTimeoutNs / 2));
}

TEST_CASE("ring: PREFETCHW is used exactly where the kernel says the CPU has it", "[event_ring]") {
  memstage::preload::detect_prefetch_for_write();
#if defined(__x86_64__)
  // The kernel's name for CPUID 0x80000001 ECX bit 8 (PRFCHW).
  CHECK(memstage::preload::g_cpu_prefetches_for_write == cpuinfo_has_flag("3dnowprefetch"));
#else
  CHECK(memstage::preload::g_cpu_prefetches_for_write);
#endif
}
