// e2e.leaks: leaks exactly 1000 blocks of 1000 bytes from leak_a() and 10 blocks of
// 1 MiB from leak_b() in the middle of heavy traffic that frees everything it allocates
// (hundreds of thousands of malloc/calloc/realloc/free of varied sizes, vectors, strings,
// maps). It never writes to stdout, so libc keeps no stdout buffer whose stack passes
// through main. Truth: the source line of each leaking call.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "e2e_common.h"

namespace {

constexpr int kBlocksA = 1000;
constexpr size_t kSizeA = 1000;
constexpr int kBlocksB = 10;
constexpr size_t kSizeB = 1048576;

void* g_leaked_a[kBlocksA];
char* g_leaked_b[kBlocksB];
int g_leak_a_line, g_leak_b_line;

uint32_t g_rng = 12345;
uint32_t next_random() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

}  // namespace

E2E_FRAME void leak_a(int i) {
  g_leak_a_line = __LINE__; void* p = malloc(kSizeA);
  escape(p);
  memset(p, i & 0xff, kSizeA);
  g_leaked_a[i] = p;
}

E2E_FRAME void leak_b(int i) {
  g_leak_b_line = __LINE__; char* p = new char[kSizeB];
  escape(p);
  memset(p, i & 0xff, kSizeB);
  g_leaked_b[i] = p;
}

// Raw C allocation traffic: a pool of slots, each step frees or replaces one.
E2E_FRAME unsigned long c_traffic(int steps) {
  static void* slots[4096];
  static size_t sizes[4096];
  unsigned long checksum = 0;
  for (int i = 0; i < steps; ++i) {
    const uint32_t r = next_random();
    const size_t k = r % 4096;
    const uint32_t kind = (r >> 12) % 16;
    size_t size = 1 + next_random() % ((kind == 0) ? 70000 : 600);
    if (slots[k] && kind < 3) {
      void* q = realloc(slots[k], size);  // grow or shrink in place or moved
      slots[k] = q;
      sizes[k] = size;
    } else {
      free(slots[k]);
      if (kind == 3) {
        slots[k] = calloc(size, 3);
        size *= 3;
      } else {
        slots[k] = malloc(size);
      }
      sizes[k] = size;
    }
    static_cast<unsigned char*>(slots[k])[sizes[k] - 1] = static_cast<unsigned char>(i);
    checksum += sizes[k];
    if (i % 331 == 0) {
      free(slots[k]);
      slots[k] = nullptr;
    }
  }
  for (int k = 0; k < 4096; ++k) {
    free(slots[k]);
    slots[k] = nullptr;
  }
  return checksum;
}

// C++ traffic: vectors that grow, strings, a map of strings.
E2E_FRAME unsigned long cxx_traffic(int rounds) {
  unsigned long checksum = 0;
  std::map<std::string, std::vector<int>> index;
  for (int i = 0; i < rounds; ++i) {
    std::vector<int> v;
    const int n = 1 + static_cast<int>(next_random() % 300);
    for (int j = 0; j < n; ++j) v.push_back(static_cast<int>(next_random() % 1000));
    std::sort(v.begin(), v.end());
    std::string key = "key-" + std::to_string(next_random() % 500) + std::string(next_random() % 40, 'x');
    index[key] = std::move(v);
    if (index.size() > 200) index.erase(index.begin());
    std::string joined;
    for (int j = 0; j < 5; ++j) joined += std::to_string(j * i) + ",";
    checksum += joined.size() + index.size();
  }
  return checksum;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  unsigned long checksum = 0;
  int a = 0, b = 0;
  for (int round = 0; round < 100; ++round) {
    checksum += c_traffic(3000);
    checksum += cxx_traffic(150);
    for (int i = 0; i < 10; ++i) leak_a(a++);
    if (round % 10 == 5) leak_b(b++);
  }
  static Truth truth;
  truth.add("leak_a_line", g_leak_a_line);
  truth.add("leak_b_line", g_leak_b_line);
  truth.add("blocks_a", a);
  truth.add_u("size_a", kSizeA);
  truth.add("blocks_b", b);
  truth.add_u("size_b", kSizeB);
  truth.add_str("source", "leaks.cpp");
  truth.add_u("checksum", checksum);
  truth.write_to(truth_file);
  return 0;
}
