// e2e.thread_churn: THREADS short-lived threads, one after the other; each allocates and
// frees a few blocks and leaves exactly one of kLeakSize bytes, from leak_in_thread().
// The tracer's memory must follow the threads alive at once (here two), not all that
// ever ran, and no event may be lost however many threads came and went.
// Truth: the number of threads, leaked blocks and allocation calls.
// Usage: thread_churn TRUTH THREADS
#include <pthread.h>

#include "e2e_common.h"

namespace {

constexpr size_t kLeakSize = 4567;
constexpr int kBlocksPerThread = 16;
long long g_allocations = 0;  // written by one thread at a time (each is joined)

}  // namespace

E2E_FRAME void* leak_in_thread() {
  void* p = malloc(kLeakSize);
  escape(p);
  return p;
}

E2E_FRAME void* thread_body(void*) {
  void* blocks[kBlocksPerThread];
  for (int i = 0; i < kBlocksPerThread; ++i) {
    blocks[i] = malloc(64 + 32 * i);
    escape(blocks[i]);
  }
  for (int i = 0; i < kBlocksPerThread; ++i) free(blocks[i]);
  g_allocations += kBlocksPerThread + 1;
  return leak_in_thread();
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int threads = atoi(argv[2]);
  int leaked = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, thread_body, nullptr) != 0) return 3;
    void* block = nullptr;
    pthread_join(thread, &block);
    leaked += block != nullptr;
  }
  printf("%d threads, one after the other, left %d blocks of %zu bytes\n", threads, leaked, kLeakSize);
  Truth truth;
  truth.add("threads", threads);
  truth.add("leaked_blocks", leaked);
  truth.add("leak_size", static_cast<long long>(kLeakSize));
  truth.add("allocations", g_allocations);
  truth.write_to(argv[1]);
  return 0;
}
