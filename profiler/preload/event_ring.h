// Per-thread event buffer: one producer (the thread that allocates), one consumer (the
// writer thread). Lock-free; the producer never blocks unless the ring is full.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "profiler/preload/futex.h"

namespace memstage::preload {

// Whether the CPU has PREFETCHW (AMD's since the K8, Intel's since Broadwell): a CPU
// without it may fault on the instruction, so it is asked once, at start.
inline bool g_cpu_prefetches_for_write = false;
inline void detect_prefetch_for_write() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  g_cpu_prefetches_for_write = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (ecx & bit_PRFCHW);
#else
  g_cpu_prefetches_for_write = true;  // __builtin_prefetch for write is a hint everywhere else
#endif
}

enum class EventKind : uint8_t {
  kAlloc,     // a = address, b = size, stack
  kRealloc,   // the allocation half of a realloc, as kAlloc
  kFree,      // a = address
  kMmap,      // a = address, b = length, stack
  kMunmap,    // a = address, b = length
  kEncoded,   // `length` bytes of ready trace records in the slots that follow
  kEncodedBlob,  // a = tracer_map'd block holding `length` bytes of records; b = its size
};

// Every event has a number of one process-wide counter: the writer merges the rings by it
// (event_order.h), so the trace has one order in which a block is always freed before its
// address is reused.
struct RawEvent {
  uint64_t seq;
  uint64_t a;
  uint64_t b;
  uint32_t stack_or_length;
  EventKind kind;
  uint8_t padding;
  // kAlloc, kRealloc: the call (trace::AllocCall) | log2 of the alignment it asked << 8, in
  // what was padding, one 16-bit store (two byte stores showed in callgrind's count).
  uint16_t call;
};
static_assert(sizeof(RawEvent) == 32);

class EventRing {
 public:
  static constexpr uint32_t kSlots = 1u << 15;  // 1 MiB: a few ms of a busy thread
  static constexpr uint32_t kWriteAheadSlots = 32;

  uint64_t free_slots() const {
    return kSlots - (tail_.load(std::memory_order_relaxed) - head_.load(std::memory_order_acquire));
  }
  // Producer side: room for `slots` more? Looks at the consumer's position only when the
  // last one it saw leaves too little room, so the producer rarely touches its cache line.
  bool has_room(uint64_t slots) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (kSlots - (tail - seen_head_) >= slots) return true;
    seen_head_ = head_.load(std::memory_order_acquire);
    return kSlots - (tail - seen_head_) >= slots;
  }
  // Producer side, when the ring is full: sleeps until the consumer moves on, at most
  // `timeout_ns`. A full ring means the consumer is behind; spinning on sched_yield would
  // take from it the CPU it needs, a system call a turn. The consumer wakes the sleeper
  // when it moves on (consume_to): a sleep to the timeout left a core idle while the
  // writer had long made room (a 2-thread churn under the preload slept ~3400 times).
  void wait_for_consumer(uint64_t timeout_ns) {
    // Said before the futex reads head_, and the consumer reads it after it stores head_
    // (both sequentially consistent): either it sees the waiter, or the futex sees the move.
    producer_waiting_.store(1, std::memory_order_seq_cst);
    // The low half of head_ (little-endian): it changes with every consume.
    futex_wait(&head_, static_cast<uint32_t>(seen_head_), timeout_ns);
    producer_waiting_.store(0, std::memory_order_relaxed);
  }
  // Producer side: slots published so far (a count that only grows).
  uint64_t tail() const { return tail_.load(std::memory_order_relaxed); }
  // Producer side: slots in use as of the consumer position last seen (an overestimate).
  uint64_t used_slots_seen() const { return tail_.load(std::memory_order_relaxed) - seen_head_; }
  // Producer side. Caller checked free_slots() >= count of slots it writes.
  RawEvent& slot_at(uint64_t offset) {
    return slots_[(tail_.load(std::memory_order_relaxed) + offset) & (kSlots - 1)];
  }
  // Producer side: the number of the event about to be published, taken from `next` or
  // read from it (event_order.h). A read marks the ring, with the floor it cannot be under
  // (this ring's previous number), until the publish.
  uint64_t take_number(std::atomic<uint64_t>& next) {
    last_number_ = next.fetch_add(1, std::memory_order_relaxed);
    return last_number_;
  }
  uint64_t read_number(const std::atomic<uint64_t>& next) {
    reading_mark_.store(last_number_ + 1, std::memory_order_relaxed);
    // The mark before the load in the code; the writer's membarrier orders them in the CPU.
    std::atomic_signal_fence(std::memory_order_seq_cst);
#if defined(__x86_64__)
    if (g_cpu_prefetches_for_write) asm volatile("prefetchw %0" : : "m"(next));
#endif
    last_number_ = next.load(std::memory_order_relaxed);
    return last_number_;
  }
  void publish(uint64_t count) {
    tail_.store(tail_.load(std::memory_order_relaxed) + count, std::memory_order_release);
    reading_mark_.store(0, std::memory_order_release);  // after the tail: seen clear, the event is seen
  }
  // Producer side, after a publish: asks for the line kWriteAheadSlots on, to be written.
  // The writer, on another core, read every line of the ring last; a store to such a line
  // waits for it to come back, and the event number's locked add waits for every store
  // before it, so without this the traced thread waits a line's transfer every other
  // event (docs/performance.md). Ahead by 1 KiB, which the writer left a ring's length ago.
  void prefetch_ahead_for_write() {
    if (!g_cpu_prefetches_for_write) return;
    const RawEvent* ahead = &slots_[(tail_.load(std::memory_order_relaxed) + kWriteAheadSlots) & (kSlots - 1)];
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*ahead));  // GCC emits it for __builtin_prefetch only with -mprfchw
#else
    __builtin_prefetch(ahead, 1, 3);
#endif
  }

  // Consumer side.
  uint64_t head() const { return head_.load(std::memory_order_relaxed); }
  uint64_t tail_acquire() const { return tail_.load(std::memory_order_acquire); }
  const RawEvent& at(uint64_t index) const { return slots_[index & (kSlots - 1)]; }
  void consume_to(uint64_t index) {
    if (index == head_.load(std::memory_order_relaxed)) return;
    head_.store(index, std::memory_order_seq_cst);
    if (producer_waiting_.load(std::memory_order_seq_cst)) futex_wake(&head_, 1);
  }
  // Consumer side, read before the tail: the lowest number the event this ring's thread is
  // numbering can carry, or ~0 when it numbers none. A mark left with one floor for
  // `patience_ns` is not waited for (its thread died, or never returns from a signal
  // handler that interrupted it there).
  uint64_t reading_floor(uint64_t now_ns, uint64_t patience_ns) {
    const uint64_t mark = reading_mark_.load(std::memory_order_acquire);
    if (mark == 0) return ~0ull;
    if (mark != mark_seen_) {
      mark_seen_ = mark;
      mark_seen_since_ns_ = now_ns;
    }
    return now_ns - mark_seen_since_ns_ < patience_ns ? mark - 1 : ~0ull;
  }
  // After fork: the child drops what other (now gone) threads left unwritten.
  void reset() {
    head_.store(tail_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    seen_head_ = head_.load(std::memory_order_relaxed);
    reading_mark_.store(0, std::memory_order_relaxed);
    producer_waiting_.store(0, std::memory_order_relaxed);
    mark_seen_ = 0;
  }

 private:
  alignas(64) std::atomic<uint64_t> tail_{0};
  uint64_t seen_head_ = 0;  // the producer's copy of head_
  uint64_t last_number_ = 0;
  std::atomic<uint64_t> reading_mark_{0};  // 0, or 1 + the floor of a number being read
  alignas(64) std::atomic<uint64_t> head_{0};
  std::atomic<uint32_t> producer_waiting_{0};  // written by the producer only when the ring is full
  uint64_t mark_seen_ = 0;  // the consumer's: the mark last seen, and since when
  uint64_t mark_seen_since_ns_ = 0;
  alignas(64) RawEvent slots_[kSlots];
};

// Bytes of record payload that follow a kEncoded header, in whole slots.
inline uint32_t encoded_payload_slots(uint32_t bytes) {
  return (bytes + sizeof(RawEvent) - 1) / sizeof(RawEvent);
}

}  // namespace memstage::preload
