// What a fresh page costs this machine, three ways: touched one 4 KiB page at a time (a
// fault each), made resident in one call (MADV_POPULATE_WRITE), and touched in 2 MiB huge
// pages (MADV_HUGEPAGE, a fault each 512 pages). On a VM a fault can be a trap to the
// hypervisor: then the first costs many times the others, and memstage's own analysis
// (which touches tens of thousands of fresh pages) asks for huge pages
// (harness/cli/analysis_allocator.cpp). Prints microseconds per 4 KiB page, the median of
// ROUNDS rounds of MIB mebibytes each, and the first round apart: on a VM whose guest gives
// free memory back to the host (virtio-balloon's free page reporting), pages not used for a
// while must be backed by the host again, and only the first rounds pay it (later ones
// reuse the pages the round before let go). Run it alone, with the ways in another order
// (WAYS: a string of t, p and h), to see each way's first.
//
//   memstage_page_faults [MIB [ROUNDS [WAYS]]]      (defaults: 256, 5 and tph)
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { kHugeBytes = 2 << 20, kPageBytes = 4096, kMaxRounds = 99 };
enum Way { kTouched, kPopulated, kHuge };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Microseconds per 4 KiB page for one round of `bytes` made resident `way`; < 0 on failure.
static double one_round(size_t bytes, enum Way way) {
  char* mapped = mmap(NULL, bytes + kHugeBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return -1;
  char* start = (char*)(((uintptr_t)mapped + kHugeBytes - 1) & ~(uintptr_t)(kHugeBytes - 1));
  madvise(start, bytes, way == kHuge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  const double begin = now_s();
  if (way == kPopulated) {
    if (madvise(start, bytes, MADV_POPULATE_WRITE) != 0) {
      munmap(mapped, bytes + kHugeBytes);
      return -1;
    }
  } else {
    for (size_t i = 0; i < bytes; i += kPageBytes) start[i] = 1;
  }
  const double us_per_page = (now_s() - begin) * 1e6 / (double)(bytes / kPageBytes);
  munmap(mapped, bytes + kHugeBytes);
  return us_per_page;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const long mib = argc > 1 ? atol(argv[1]) : 256;
  const long rounds = argc > 2 ? atol(argv[2]) : 5;
  const char* ways = argc > 3 ? argv[3] : "tph";
  if (argc > 4 || mib < 2 || mib > (1 << 20) || rounds < 1 || rounds > kMaxRounds ||
      strspn(ways, "tph") != strlen(ways) || strlen(ways) == 0) {
    fprintf(stderr, "usage: memstage_page_faults [MIB >= 2 [ROUNDS 1-%d [WAYS of t, p, h]]]\n", kMaxRounds);
    return 2;
  }
  const char* names[] = {"touched 4 KiB pages", "populated in one call", "2 MiB huge pages"};
  for (const char* w = ways; *w; ++w) {
    const int way = *w == 't' ? kTouched : *w == 'p' ? kPopulated : kHuge;
    double us[kMaxRounds];
    for (long r = 0; r < rounds; ++r) {
      us[r] = one_round((size_t)mib << 20, (enum Way)way);
      if (us[r] < 0) {
        fprintf(stderr, "memstage_page_faults: %s failed\n", names[way]);
        return 1;
      }
    }
    const double first = us[0];
    qsort(us, (size_t)rounds, sizeof us[0], by_value);
    printf("%-22s %8.2f us a 4 KiB page (median of %ld rounds of %ld MiB; the first %.2f)\n", names[way],
           us[rounds / 2], rounds, mib, first);
  }
  return 0;
}
