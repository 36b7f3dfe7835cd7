// tests/scale: a program that holds an exactly known number of bytes at its peak.
//   grow linear N     4096·N + 1 MiB
//   grow quadratic N  16·N²
//   grow power N      floor(64·N^1.5)
// inside the stage "build", after a stage "setup" that holds a constant 256 KiB (so a
// stage declared flat that is flat can be checked too). Every byte is touched, so the
// peak RSS follows the heap. Nothing is printed: stdio buffers would add heap of their own.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <memstage/stage.h>

static void* hold(size_t bytes) {
  void* p = malloc(bytes);
  if (!p) exit(3);
  memset(p, 1, bytes);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::string family = argv[1];
  const double n = atof(argv[2]);
  size_t bytes = 0;
  if (family == "linear") bytes = size_t(4096 * n + 1024 * 1024);
  else if (family == "quadratic") bytes = size_t(16 * n * n);
  else if (family == "power") bytes = size_t(std::floor(64 * std::pow(n, 1.5)));
  else return 2;
  {
    memstage::Stage setup{"setup"};
    free(hold(256 * 1024));
  }
  {
    memstage::Stage build{"build"};
    free(hold(bytes));
  }
  return 0;
}
