// The one order of the trace's events across the threads' rings, and what keeping it costs
// a thread.
//
// The rule the trace keeps: each thread's events in its own order, and a block's free before
// the reuse of its address. Every event carries a number of one process-wide counter and the
// writer merges the rings by it. An event takes its number (fetch_add), before a free is
// passed on, except allocations, which read it (a plain load) after the allocator returned:
// a reuse of a freed address then reads a number above the free's (the free's add came
// before the real free, which came before the allocation returned the address), and the
// merge key 2 x number (+ 1 for a number taken) puts the free first. Allocations that read
// the same number may go in any order: they only add, so what is live and the peak come
// out the same. Reading spares half the events the locked add on the counter's cache line,
// which the threads pass between them (docs/performance.md).
//
// What reading costs the writer: numbers taken leave no gaps, so one taken but not yet
// published is seen missing and waited for; a number read leaves no trace until published.
// So, first in a drain, the writer takes a number of its own (a fence, that no event
// carries) and makes every running thread of the process pass a full memory barrier
// (membarrier(2), private expedited). A thread marks its ring before it reads the number
// (the mark holds a floor: its own previous number, which the one it reads cannot be under)
// and publish clears the mark. After the barrier, a thread whose mark the writer does not see
// (or that joins after it: the writer counts the threads after the barrier) reads above the
// fence's number; one whose mark it sees, its floor or above. So every event numbered below
//     horizon = min(fence + 1, the floors of the marked rings)
// is in the rings, and until the end the writer writes only those.
// Where the kernel has no membarrier (before 4.14, or a seccomp filter refuses it),
// allocations take numbers as every other event does.
#pragma once

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "profiler/preload/event_ring.h"

namespace memstage::preload {

// The process-wide event number.
struct EventNumbers {
  // Allocations read the number (the writer can fence the threads); decided at start.
  bool allocations_read = false;
  // On a line of its own, which the threads that free pass between them: nothing read on
  // every event may share it.
  alignas(64) std::atomic<uint64_t> next{0};
  char line_rest_[64 - sizeof(std::atomic<uint64_t>)] = {};
};

// Which events read their number, where reading is on.
inline bool reads_number(EventKind kind) { return kind == EventKind::kAlloc || kind == EventKind::kRealloc; }

// Producer side: the number of an event of `kind` about to be published in `ring`, read or
// taken as above. Called right before the publish: the writer waits for a number that is
// taken or read but not yet published, so that window stays tiny.
inline uint64_t number_event(EventRing& ring, EventNumbers& numbers, EventKind kind) {
  return numbers.allocations_read && reads_number(kind) ? ring.read_number(numbers.next)
                                                        : ring.take_number(numbers.next);
}

// The merge's key: below every event that took a number equal to or above its own.
inline uint64_t order_key(const RawEvent& e, bool allocations_read) {
  return 2 * e.seq + ((allocations_read && reads_number(e.kind)) ? 0 : 1);
}

// Registers the process for expedited membarrier; false where the kernel refuses. A fork's
// child inherits the registration with the parent's memory map.
inline bool register_thread_fence() {
  const long supported = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

// A full memory barrier on every thread of the process that runs now (threads not running
// pass one when they are scheduled again).
inline bool fence_all_threads() { return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0; }

// Slots the event at the head of a ring takes, its payload included.
inline uint64_t slots_of(const RawEvent& e) {
  return e.kind == EventKind::kEncoded ? 1 + encoded_payload_slots(e.stack_or_length) : 1;
}

// Consumer side: the rings merged by key into one order, a drain at a time.
class EventMerge {
 public:
  static constexpr uint64_t kNoHorizon = ~0ull;
  // A number taken and never published (its thread died inside the tracer) is given up
  // after this long; a ring marked this long with the same floor is no longer waited for.
  static constexpr uint64_t kPatienceNs = 1'000'000'000;

  // At start and in a fork's child: the numbers below `next` are not this process's to write.
  void restart(uint64_t next) {
    next_number_ = next;
    fence_ = kNoFence;
    gap_since_ns_ = 0;
  }

  // First of a drain: the fence. Returns the horizon before the rings' marks are looked
  // at (kNoHorizon where allocations take their numbers). The thread count is to be read
  // after it: a thread that joins later numbers above the fence.
  uint64_t fence(EventNumbers& numbers) {
    if (!numbers.allocations_read) return kNoHorizon;
    // A new fence once the last is written past. Until then the last one stands: a thread
    // unmarked at its barrier reads above it for good, and one marked then still shows its
    // mark or has published.
    if (fence_ == kNoFence || next_number_ > fence_) {
      fence_ = numbers.next.fetch_add(1, std::memory_order_acq_rel);
      // It fails only where the program itself refused membarrier after the tracer started
      // (a seccomp filter of its own): then a mark still in its thread's store buffer (some
      // nanoseconds) can go unseen, and that allocation be written after later frees.
      // Not mended: events do not say how they were numbered, so the numbering cannot
      // change in the middle of a run.
      fence_all_threads();
    }
    return fence_ + 1;
  }

  // Then the horizon, lowered to the floors of the rings marked now: every event numbered
  // below it is published. Call it before reading the rings' tails; `ring(i)` is thread
  // i's EventRing, i < n.
  template <class Rings>
  uint64_t horizon(uint64_t fenced, Rings&& ring, uint32_t n, uint64_t now_ns) {
    if (fenced == kNoHorizon) return kNoHorizon;
    uint64_t horizon = fenced;
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t floor = ring(i).reading_floor(now_ns, kPatienceNs);
      if (floor < horizon) horizon = floor;
    }
    return horizon;
  }

  // Calls write(ring, slot index) for every event between heads and tails that can be
  // ordered now, in order, and moves heads on. `final`: everything, gaps given up. Returns
  // how many numbers it gave up (taken, never published).
  template <class Rings, class Write>
  uint64_t merge(Rings&& rings, uint32_t n, uint64_t* heads, const uint64_t* tails, uint64_t horizon,
                 bool allocations_read, bool final, uint64_t now_ns, Write&& write) {
    uint64_t given_up = 0;
    for (;;) {
      step_over_fence();
      int best = -1;
      uint64_t best_key = ~0ull;
      uint64_t second_key = ~0ull;
      for (uint32_t i = 0; i < n; ++i) {
        if (heads[i] == tails[i]) continue;
        const uint64_t key = order_key(rings(i).at(heads[i]), allocations_read);
        if (key < best_key) {
          second_key = best_key;
          best_key = key;
          best = static_cast<int>(i);
        } else if (key < second_key) {
          second_key = key;
        }
      }
      if (best < 0) break;
      uint64_t number = best_key / 2;
      if (!final && number >= horizon) break;
      if (number > next_number_) {
        // A number below it was taken and not published yet: wait for it, but not forever.
        if (!final) {
          if (gap_since_ns_ == 0) gap_since_ns_ = now_ns;
          if (now_ns - gap_since_ns_ < kPatienceNs) break;
        }
        given_up += number - next_number_ - (fence_ >= next_number_ && fence_ < number ? 1 : 0);
        next_number_ = number;
      }
      gap_since_ns_ = 0;
      const EventRing& ring = rings(static_cast<uint32_t>(best));
      // The events that follow in the same ring are next in order too while no other ring
      // holds a lower key and nothing is missing before them: written without looking at
      // the other rings again.
      uint64_t key = best_key;
      for (;;) {
        write(static_cast<uint32_t>(best), heads[best]);
        heads[best] += slots_of(ring.at(heads[best]));
        if ((key & 1) && number >= next_number_) next_number_ = number + 1;
        step_over_fence();
        if (heads[best] == tails[best]) break;
        key = order_key(ring.at(heads[best]), allocations_read);
        number = key / 2;
        if (key > second_key || number > next_number_ || (!final && number >= horizon)) break;
      }
    }
    return given_up;
  }

 private:
  static constexpr uint64_t kNoFence = ~0ull;
  // The fence's number is written past as if an event carried it.
  void step_over_fence() {
    if (next_number_ == fence_) ++next_number_;
  }

  uint64_t next_number_ = 0;  // the lowest number not written yet
  uint64_t fence_ = kNoFence;  // the writer's own number, taken at its latest fence
  uint64_t gap_since_ns_ = 0;
};

}  // namespace memstage::preload
