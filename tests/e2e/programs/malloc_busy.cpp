// e2e.attach_in_allocator: a program inside glibc's malloc and free much of the time (blocks
// of 100 KB, below the mmap threshold: the heap's top grows by brk and is trimmed back),
// with arithmetic between the rounds. gdb, attaching, stops it at any instant, often inside
// the allocator with its lock held and its heap half-changed. Writes `ready` once looping,
// then runs until killed.
#include <cstdio>
#include <cstdlib>

#include "e2e_common.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  constexpr int kBlocks = 256;
  static void* held[kBlocks];
  unsigned long sum = 0;
  for (unsigned long round = 0;; ++round) {
    for (int i = 0; i < kBlocks; ++i) {
      held[i] = malloc(100000);
      escape(held[i]);
      static_cast<char*>(held[i])[0] = static_cast<char>(i);
    }
    for (int i = kBlocks - 1; i >= 0; --i) free(held[i]);
    for (int i = 0; i < 200000; ++i) sum = sum * 6364136223846793005ul + static_cast<unsigned long>(i);
    escape(&sum);
    if (round == 0) {
      FILE* ready = fopen(argv[1], "w");
      if (!ready) return 3;
      fclose(ready);
    }
  }
}
