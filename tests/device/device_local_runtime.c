/* The CUDA runtime reached only through a library loaded RTLD_LOCAL (fake_extension.c):
 * stage "local_runtime" allocates 6 MiB through it and frees it. Exits 2 when the call
 * fails (a tracer that cannot find the real cudaMalloc returns an error in its place). */
#include <dlfcn.h>
#include <stdio.h>

#include <memstage/stage.h>

int main(void) {
  void* extension = dlopen(FAKE_EXTENSION_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!extension) {
    fprintf(stderr, "device_local_runtime: %s\n", dlerror());
    return 2;
  }
  int (*alloc_and_free)(size_t) = (int (*)(size_t))dlsym(extension, "fake_extension_alloc_and_free");
  if (!alloc_and_free) return 2;
  memstage_stage_begin("local_runtime");
  const int e = alloc_and_free((size_t)6 << 20);
  memstage_stage_end();
  if (e) {
    fprintf(stderr, "device_local_runtime: cudaMalloc through the extension failed: %d\n", e);
    return 2;
  }
  printf("device_local_runtime: ok\n");
  return 0;
}
