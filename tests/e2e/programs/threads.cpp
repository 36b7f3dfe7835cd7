// e2e.threads: 4 threads x 1 000 000 allocations (malloc, calloc, realloc; frees mixed
// in), some blocks handed to another thread through a shared queue and freed there.
// Each thread leaves exactly kLeakedPerThread blocks of kLeakSize bytes, allocated in
// leak_from_worker(). Truth: the program's own counts of allocation and free calls.
// Usage: threads TRUTH [THREADS] [ALLOCATIONS_PER_THREAD]
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "e2e_common.h"

namespace {

constexpr int kSlots = 256;
constexpr int kLeakedPerThread = 25;
constexpr size_t kLeakSize = 4321;

// A bounded queue of blocks another thread frees; full means the producer frees itself.
struct SharedQueue {
  std::mutex mutex;
  void* items[1024];
  int head = 0, count = 0;
  bool push(void* p) {
    std::lock_guard<std::mutex> lock(mutex);
    if (count == 1024) return false;
    items[(head + count++) % 1024] = p;
    return true;
  }
  void* pop() {
    std::lock_guard<std::mutex> lock(mutex);
    if (count == 0) return nullptr;
    void* p = items[head];
    head = (head + 1) % 1024;
    --count;
    return p;
  }
};

SharedQueue g_queue;
std::atomic<long long> g_allocations{0}, g_frees{0}, g_cross_thread_frees{0};
void* g_leaked[64][kLeakedPerThread];

}  // namespace

E2E_FRAME void leak_from_worker(int thread, int i) {
  void* p = malloc(kLeakSize);
  escape(p);
  g_leaked[thread][i] = p;
}

E2E_FRAME void worker(int thread, long allocations) {
  void* slots[kSlots] = {};
  uint32_t x = 2654435761u * static_cast<uint32_t>(thread + 1);
  long long frees = 0, cross = 0;
  for (long i = 0; i < allocations; ++i) {
    x = x * 1103515245u + 12345u;
    const uint32_t k = (x >> 8) % kSlots;
    const size_t size = 8 + ((x >> 16) % 2000);
    const uint32_t kind = (x >> 4) % 16;
    if (kind == 0 && slots[k]) {
      slots[k] = realloc(slots[k], size);  // one free and one allocation
      ++frees;
    } else {
      if (slots[k]) {
        if (kind < 4 && g_queue.push(slots[k])) {
          // the other threads free it
        } else {
          free(slots[k]);
          ++frees;
        }
      }
      slots[k] = kind == 5 ? calloc(1, size) : malloc(size);
    }
    static_cast<char*>(slots[k])[0] = 1;
    if (void* other = (kind == 7 ? g_queue.pop() : nullptr)) {
      free(other);
      ++frees;
      ++cross;
    }
  }
  for (void*& p : slots) {
    free(p);
    ++frees;
  }
  for (int i = 0; i < kLeakedPerThread; ++i) leak_from_worker(thread, i);
  g_allocations += allocations + kLeakedPerThread;
  g_frees += frees;
  g_cross_thread_frees += cross;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  const int threads = argc > 2 ? atoi(argv[2]) : 4;
  const long per_thread = argc > 3 ? atol(argv[3]) : 1000000;
  if (threads < 1 || threads > 64) return 2;
  {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t, per_thread);
    for (auto& t : pool) t.join();
  }
  long long drained = 0;
  while (void* p = g_queue.pop()) {
    free(p);
    ++drained;
  }
  g_frees += drained;
  static Truth truth;
  truth.add("threads", threads);
  truth.add("allocations", g_allocations.load());
  truth.add("frees", g_frees.load());
  truth.add("cross_thread_frees", g_cross_thread_frees.load());
  truth.add("leaked_blocks", static_cast<long long>(threads) * kLeakedPerThread);
  truth.add_u("leaked_bytes", static_cast<unsigned long long>(threads) * kLeakedPerThread * kLeakSize);
  truth.add_str("leak_function", "leak_from_worker");
  truth.write_to(truth_file);
  return 0;
}
