// e2e.handoff: kThreads threads in a ring, each allocating blocks of one size class in
// hand_over() and passing them to the next thread, which frees them: a block freed by one
// thread goes to that thread's cache and is reused at once by its next allocation, so the
// same addresses pass between threads all the time. The trace must put every free before
// the allocation that reuses its address; otherwise a block reads as never freed (a leak
// from hand_over()) or a free as unknown. Each thread then keeps kKept blocks of
// kKeptSize bytes from keep_some(): the only leak.
// Truth: blocks handed over, and the kept blocks and their size.
// Usage: handoff TRUTH ROUNDS
#include <pthread.h>

#include <atomic>

#include "e2e_common.h"

namespace {

constexpr int kThreads = 8;
constexpr int kQueueSlots = 256;  // a power of two
constexpr int kKept = 3;
constexpr size_t kKeptSize = 7777;

// One producer (the previous thread), one consumer (this one).
struct Queue {
  void* slots[kQueueSlots];
  std::atomic<unsigned> head{0}, tail{0};
  bool push(void* p) {
    const unsigned t = tail.load(std::memory_order_relaxed);
    if (t - head.load(std::memory_order_acquire) == kQueueSlots) return false;
    slots[t % kQueueSlots] = p;
    tail.store(t + 1, std::memory_order_release);
    return true;
  }
  void* pop() {
    const unsigned h = head.load(std::memory_order_relaxed);
    if (h == tail.load(std::memory_order_acquire)) return nullptr;
    void* p = slots[h % kQueueSlots];
    head.store(h + 1, std::memory_order_release);
    return p;
  }
};
Queue g_queues[kThreads];
long g_rounds = 0;
std::atomic<int> g_producers_left{kThreads};
std::atomic<long long> g_handed{0};

}  // namespace

E2E_FRAME void* hand_over() {
  void* p = malloc(48);
  escape(p);
  return p;
}

E2E_FRAME void keep_some() {
  for (int i = 0; i < kKept; ++i) escape(malloc(kKeptSize));
}

E2E_FRAME void* ring_member(void* index_pointer) {
  const int me = static_cast<int>(reinterpret_cast<uintptr_t>(index_pointer));
  Queue& mine = g_queues[me];
  Queue& next = g_queues[(me + 1) % kThreads];
  long long handed = 0;
  for (long i = 0; i < g_rounds; ++i) {
    void* p = hand_over();
    while (!next.push(p)) {
      if (void* q = mine.pop()) free(q);  // make room downstream by draining upstream
    }
    ++handed;
    if (void* q = mine.pop()) free(q);
  }
  g_producers_left.fetch_sub(1);
  // Drain what the previous thread still sends, until every producer is done and empty.
  for (;;) {
    if (void* q = mine.pop()) {
      free(q);
      continue;
    }
    if (g_producers_left.load() == 0 && mine.head.load() == mine.tail.load()) break;
  }
  keep_some();
  g_handed += handed;
  return nullptr;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  g_rounds = atol(argv[2]);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i)
    if (pthread_create(&threads[i], nullptr, ring_member, reinterpret_cast<void*>(uintptr_t(i))) != 0) return 3;
  for (pthread_t& t : threads) pthread_join(t, nullptr);
  printf("%d threads handed %lld blocks round a ring\n", kThreads, g_handed.load());
  static Truth truth;
  truth.add("handed", g_handed.load());
  truth.add("kept_blocks", kThreads * kKept);
  truth.add("kept_size", kKeptSize);
  truth.write_to(argv[1]);
  return 0;
}
