/* A malloc/free loop beside a resident set of a given size, for the cost of stats mode's
 * PSS samples (harness/bench/pss_cost.sh): reading /proc/self/smaps_rollup takes longer
 * the more pages the process has, while the loop's own cost does not change.
 * usage: resident_churn MIB ITERATIONS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: resident_churn MIB ITERATIONS\n");
    return 2;
  }
  const size_t mib = strtoull(argv[1], NULL, 10);
  const long iterations = atol(argv[2]);
  char* resident = malloc(mib << 20);
  if (!resident) return 1;
  memset(resident, 1, mib << 20);
  unsigned x = 1;
  unsigned long sum = 0;
  void* window[64] = {0};
  for (long i = 0; i < iterations; ++i) {
    x = x * 1664525u + 1013904223u;
    char* p = malloc(16 + (x >> 24) % 256);
    p[0] = 1;
    sum += (unsigned char)p[0];
    const unsigned slot = (x >> 8) % 64;
    free(window[slot]);
    window[slot] = p;
  }
  for (int i = 0; i < 64; ++i) free(window[i]);
  printf("%lu %d\n", sum, resident[12345]);
  free(resident);
  return 0;
}
