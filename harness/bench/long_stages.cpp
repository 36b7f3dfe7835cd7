// A long stage-marked run for page_open.sh: for SECONDS, batches of work, each a stage
// "shard-K" (K cycles through SHARDS names, so the report keeps thousands of stage rows)
// holding "load" and "step" stages that allocate a few MiB and free most of it; every
// hundredth batch keeps a block, so the heap climbs in steps over the run.
//   memstage_long_stages SECONDS SHARDS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <memstage/stage.h>

namespace {

// Touched so the pages are resident and the optimizer keeps the block.
__attribute__((noinline)) void* fill(size_t bytes) {
  void* p = malloc(bytes);
  if (p) memset(p, 1, bytes);
  return p;
}

__attribute__((noinline)) void load(unsigned batch, std::vector<void*>& kept) {
  memstage::Stage s{"load"};
  void* block = fill((1 + batch % 7) << 18);
  if (batch % 100 == 0) {
    kept.push_back(block);
  } else {
    free(block);
  }
}

__attribute__((noinline)) void step(unsigned batch) {
  memstage::Stage s{"step"};
  std::vector<void*> temporaries;
  for (unsigned i = 0; i < 16 + batch % 16; ++i) temporaries.push_back(fill(1024 + 64 * (i % 8)));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (void* p : temporaries) free(p);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SECONDS SHARDS\n", argv[0]);
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const unsigned shards = static_cast<unsigned>(std::atoi(argv[2]));
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<void*> kept;
  unsigned batch = 0;
  for (; std::chrono::steady_clock::now() < end; ++batch) {
    const std::string name = "shard-" + std::to_string(batch % (shards ? shards : 1));
    memstage::Stage s{name.c_str()};
    load(batch, kept);
    step(batch);
  }
  for (void* p : kept) free(p);
  std::printf("%u batches, %zu blocks kept\n", batch, kept.size());
  return 0;
}
