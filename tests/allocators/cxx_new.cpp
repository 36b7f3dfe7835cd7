// C++ allocations of every operator new form, some kept: the figures must not depend on
// the allocator (jemalloc, tcmalloc and mimalloc bring their own operator new).
#include <memstage/stage.h>

#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct alignas(64) Aligned {
  char bytes[192];
};

static std::vector<void*> g_kept;

int main() {
  std::vector<std::unique_ptr<std::string>> strings;
  std::vector<double> big;
  memstage_stage_begin("work");
  for (int i = 0; i < 1000; ++i) strings.push_back(std::make_unique<std::string>(100 + i % 50, 'x'));
  for (int i = 0; i < 100; ++i) g_kept.push_back(new int[250]);                 // 1000 bytes each, kept
  for (int i = 0; i < 100; ++i) delete new Aligned;                             // aligned new/delete
  for (int i = 0; i < 100; ++i) delete[] new (std::nothrow) double[64];         // nothrow new[]
  g_kept.push_back(new (std::align_val_t{4096}) char[8192]);                    // aligned new[], kept
  big.resize(1 << 20);                                                          // 8 MiB at the peak
  memstage_stage_end();
  printf("%zu %zu\n", strings.size(), big.size());  // stdout's buffer: outside the stage
  return 0;
}
