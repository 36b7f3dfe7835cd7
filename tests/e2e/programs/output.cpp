// e2e.output: prints a lot of computed data (no addresses) through stdio and iostream,
// and the results of allocator calls whose outcome the tracer must not change (errno,
// zeroed calloc memory, realloc keeping contents, alignment, failures), then exits 7.
// e2e.py compares its stdout and exit code traced and untraced: they must be identical.
#include <errno.h>
#include <malloc.h>
#include <stdint.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_common.h"

namespace {

void allocator_behaviour() {
  errno = EDOM;
  void* p = malloc(100);
  free(p);
  printf("errno after malloc+free: %d\n", errno);
  errno = ERANGE;
  p = realloc(nullptr, 10);
  p = realloc(p, 100000);
  p = realloc(p, 5);
  free(p);
  free(nullptr);
  printf("errno after realloc chain: %d\n", errno);

  unsigned char* z = static_cast<unsigned char*>(calloc(4096, 3));
  bool zero = true;
  for (size_t i = 0; i < 4096 * 3; ++i) zero = zero && z[i] == 0;
  printf("calloc zeroed: %d\n", zero);
  free(z);

  char* s = static_cast<char*>(malloc(64));
  for (int i = 0; i < 64; ++i) s[i] = static_cast<char>('a' + i % 26);
  s = static_cast<char*>(realloc(s, 1 << 20));
  bool kept = true;
  for (int i = 0; i < 64; ++i) kept = kept && s[i] == static_cast<char>('a' + i % 26);
  printf("realloc kept contents: %d\n", kept);
  printf("usable >= requested: %d\n", malloc_usable_size(s) >= (1u << 20));
  free(s);

  for (size_t alignment : {16, 64, 4096, 65536}) {
    void* a = nullptr;
    const int r = posix_memalign(&a, alignment, 1000);
    printf("posix_memalign(%zu): %d aligned %d\n", alignment, r, reinterpret_cast<uintptr_t>(a) % alignment == 0);
    free(a);
    void* b = aligned_alloc(alignment, alignment * 3);
    printf("aligned_alloc(%zu): aligned %d\n", alignment, reinterpret_cast<uintptr_t>(b) % alignment == 0);
    free(b);
    void* c = memalign(alignment, 77);
    printf("memalign(%zu): aligned %d\n", alignment, reinterpret_cast<uintptr_t>(c) % alignment == 0);
    free(c);
  }
  void* v = valloc(100);
  printf("valloc page aligned: %d\n", reinterpret_cast<uintptr_t>(v) % 4096 == 0);
  free(v);

  void* bad = nullptr;
  printf("posix_memalign(3): %d\n", posix_memalign(&bad, 3, 10));
  errno = 0;
  volatile size_t huge = SIZE_MAX / 2;
  void* h = malloc(huge);
  printf("malloc(huge): %s errno ENOMEM %d\n", h ? "non-null" : "null", errno == ENOMEM);
  errno = 0;
  void* c = calloc(huge, 4);
  printf("calloc(overflow): %s errno ENOMEM %d\n", c ? "non-null" : "null", errno == ENOMEM);
  errno = 0;
  void* r = malloc(10);
  void* r2 = realloc(r, huge);
  printf("realloc(huge): %s errno ENOMEM %d\n", r2 ? "non-null" : "null", errno == ENOMEM);
  free(r2 ? r2 : r);
}

void computed_data() {
  // Primes, a word histogram and running sums: enough text to span many stdio buffers.
  std::vector<int> primes;
  for (int n = 2; primes.size() < 3000; ++n) {
    bool prime = true;
    for (int q : primes) {
      if (q * q > n) break;
      if (n % q == 0) {
        prime = false;
        break;
      }
    }
    if (prime) primes.push_back(n);
  }
  for (size_t i = 0; i < primes.size(); ++i) printf("prime %zu = %d\n", i, primes[i]);

  std::map<std::string, int> words;
  uint32_t x = 7;
  for (int i = 0; i < 50000; ++i) {
    x = x * 1664525u + 1013904223u;
    std::string w;
    for (uint32_t len = 1 + (x >> 28); len > 0; --len) w += static_cast<char>('a' + (x >> (len * 3)) % 6);
    ++words[w];
  }
  for (const auto& [w, n] : words) std::cout << "word " << w << ' ' << n << '\n';

  std::ostringstream sums;
  long long sum = 0;
  for (int i = 0; i < 20000; ++i) {
    sum += static_cast<long long>(i) * i % 9973;
    sums << i << ':' << sum << (i % 10 == 9 ? '\n' : ' ');
  }
  std::cout << sums.str();
  std::vector<std::string> sorted;
  for (const auto& [w, n] : words) sorted.push_back(std::to_string(n) + "/" + w);
  std::sort(sorted.begin(), sorted.end());
  for (const auto& s : sorted) std::cout << s << '\n';
  std::cout.flush();
}

}  // namespace

int main() {
  allocator_behaviour();
  fflush(stdout);
  computed_data();
  printf("done\n");
  return 7;
}
