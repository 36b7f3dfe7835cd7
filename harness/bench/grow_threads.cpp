// A heap that only grows, on several threads: THREADS threads (8) each allocate 1 KiB blocks,
// touching each, until the process holds MIB MiB (512), then free them all. Every 1/64 of
// the heap is a new high, where a thread waits for the writer's drain (wait_for_writer_drain):
// what those waits cost a program.
//
//   memstage_grow_threads [THREADS] [MIB]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 8;
  const size_t mib = argc > 2 ? strtoul(argv[2], nullptr, 10) : 512;
  if (threads < 1 || mib < 1) {
    fprintf(stderr, "usage: memstage_grow_threads [THREADS] [MIB]\n");
    return 2;
  }
  constexpr size_t kBlockBytes = 1024;
  const size_t per_thread = (mib << 20) / static_cast<size_t>(threads) / kBlockBytes;
  std::vector<std::vector<void*>> held(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&held, t, per_thread] {
      std::vector<void*>& mine = held[static_cast<size_t>(t)];
      mine.reserve(per_thread);
      for (size_t i = 0; i < per_thread; ++i) {
        void* p = malloc(kBlockBytes);
        memset(p, 1, 64);
        mine.push_back(p);
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  size_t blocks = 0;
  for (std::vector<void*>& mine : held) {
    blocks += mine.size();
    for (void* p : mine) free(p);
  }
  printf("%zu\n", blocks);
}
