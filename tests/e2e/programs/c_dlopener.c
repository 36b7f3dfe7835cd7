/* e2e.cxx_local: a C program (no C++ runtime of its own, like python3) that dlopen()s a
 * C++ module RTLD_LOCAL (as Python loads extension modules), so libstdc++ arrives outside
 * the global scope. The module's operator new must still reach libstdc++ through the
 * tracer, and its 234567-byte leak must be reported.
 * Usage: c_dlopener MODULE_SO */
#include <dlfcn.h>
#include <stdio.h>

typedef void* (*Allocate)(void);

void* volatile g_kept;

/* Not a tail call: the frame stays on the stack. */
__attribute__((noipa)) int call_module(Allocate allocate) {
  g_kept = allocate();
  return g_kept != 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 3;
  }
  Allocate allocate = (Allocate)dlsym(handle, "cxx_module_new");
  if (!allocate) return 4;
  return call_module(allocate) ? 0 : 5;
}
