/* A stand-in for the CUDA runtime (libcudart.so): it finds the driver the way the real one
 * does, dlopen + dlsym("cuGetProcAddress_v2") + cuGetProcAddress for each entry point,
 * and calls the driver inside cudaMalloc/cudaFree. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef int cudaError_t;
typedef int (*GetProcFn)(const char*, void**, int, uint64_t, int*);
typedef int (*AllocFn)(uint64_t*, size_t);
typedef int (*FreeFn)(uint64_t);
typedef int (*AllocAsyncFn)(uint64_t*, size_t, void*);
typedef int (*FreeAsyncFn)(uint64_t, void*);

static AllocFn driver_alloc;
static FreeFn driver_free;
static AllocAsyncFn driver_alloc_async;
static FreeAsyncFn driver_free_async;

static int load_driver(void) {
  if (driver_alloc) return 0;
  void* driver = dlopen(FAKE_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!driver) return 3;
  GetProcFn get = (GetProcFn)dlsym(driver, "cuGetProcAddress_v2");
  if (!get) return 3;
  /* As cudart 12 does: CUDA version 12000, per-thread default stream for the async ones. */
  if (get("cuMemAlloc", (void**)&driver_alloc, 12000, 0, 0) ||
      get("cuMemFree", (void**)&driver_free, 12000, 0, 0) ||
      get("cuMemAllocAsync", (void**)&driver_alloc_async, 12000, 2, 0) ||
      get("cuMemFreeAsync", (void**)&driver_free_async, 12000, 2, 0)) {
    return 3;
  }
  return 0;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  int e = load_driver();
  if (e) return e;
  uint64_t p = 0;
  e = driver_alloc(&p, bytes);
  *ptr = (void*)(uintptr_t)p;
  return e ? 2 : 0;
}
cudaError_t cudaFree(void* ptr) {
  int e = load_driver();
  return e ? e : driver_free((uint64_t)(uintptr_t)ptr) ? 1 : 0;
}
cudaError_t cudaMallocAsync(void** ptr, size_t bytes, void* stream) {
  int e = load_driver();
  if (e) return e;
  uint64_t p = 0;
  e = driver_alloc_async(&p, bytes, stream);
  *ptr = (void*)(uintptr_t)p;
  return e ? 2 : 0;
}
cudaError_t cudaFreeAsync(void* ptr, void* stream) {
  int e = load_driver();
  return e ? e : driver_free_async((uint64_t)(uintptr_t)ptr, stream) ? 1 : 0;
}
