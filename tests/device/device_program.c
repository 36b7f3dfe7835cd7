/* Device allocations through every path the tracer stands in front of, one stage each,
 * against the fake driver and runtime (fake_cuda.c, fake_cudart.c). Sizes are MiB, chosen
 * so that each stage's peak and what it keeps are known:
 *   direct        cuMemAlloc_v2 1 + 2, frees the 1                 peak 3, keeps 2
 *   proc_address  cuGetProcAddress("cuMemAlloc") from a dlopen'd   peak 2 + 4, keeps 0
 *                 driver: 4, freed through cuGetProcAddress("cuMemFree")
 *   runtime       cudaMalloc 8 (the runtime calls the driver        peak 2 + 8, keeps 0
 *                 inside: counted once), cudaFree
 *   async         cudaMallocAsync 3 + cuMemAllocAsync 5, both freed  peak 2 + 8, keeps 0
 *   vmm           cuMemCreate 16, cuMemRelease; managed 1 kept       peak 2 + 16, keeps 1
 *   leak          cuMemAllocPitch 512 B rows x 2048 = 1 MiB, kept    peak 4, keeps 1
 * Device leaks at exit: 2 (direct) + 1 (vmm's managed) + 1 (leak) = 4 MiB.
 * Exits 1 if dlsym(RTLD_NEXT) from a library found the wrong definition. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <memstage/stage.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemAllocManaged(CUdeviceptr*, size_t, unsigned);
CUresult cuMemAllocPitch_v2(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
CUresult cuMemAllocAsync(CUdeviceptr*, size_t, void*);
CUresult cuMemFreeAsync(CUdeviceptr, void*);
CUresult cuMemCreate(uint64_t*, size_t, const void*, unsigned long long);
CUresult cuMemRelease(uint64_t);
int cudaMalloc(void**, size_t);
int cudaFree(void*);
int cudaMallocAsync(void**, size_t, void*);
int cudaFreeAsync(void*, void*);
void* fake_next_probe(void);

#define MiB (1u << 20)

static void must(int result, const char* what) {
  if (result != 0) {
    fprintf(stderr, "device_program: %s failed: %d\n", what, result);
    exit(2);
  }
}

int main(void) {
  CUdeviceptr one, two, four, five, managed, pitched;
  void *eight, *three;
  size_t pitch;
  uint64_t handle;

  memstage_stage_begin("direct");
  must(cuMemAlloc_v2(&one, 1 * MiB), "cuMemAlloc_v2");
  must(cuMemAlloc_v2(&two, 2 * MiB), "cuMemAlloc_v2");
  must(cuMemFree_v2(one), "cuMemFree_v2");
  memstage_stage_end();

  memstage_stage_begin("proc_address");
  {
    void* driver = dlopen(FAKE_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!driver) return 2;
    CUresult (*get)(const char*, void**, int, uint64_t) =
        (CUresult(*)(const char*, void**, int, uint64_t))dlsym(driver, "cuGetProcAddress");
    CUresult (*alloc)(CUdeviceptr*, size_t) = 0;
    CUresult (*release)(CUdeviceptr) = 0;
    must(get("cuMemAlloc", (void**)&alloc, 12000, 0), "cuGetProcAddress(cuMemAlloc)");
    must(get("cuMemFree", (void**)&release, 12000, 0), "cuGetProcAddress(cuMemFree)");
    must(alloc(&four, 4 * MiB), "cuMemAlloc through cuGetProcAddress");
    must(release(four), "cuMemFree through cuGetProcAddress");
  }
  memstage_stage_end();

  memstage_stage_begin("runtime");
  must(cudaMalloc(&eight, 8 * MiB), "cudaMalloc");
  must(cudaFree(eight), "cudaFree");
  memstage_stage_end();

  memstage_stage_begin("async");
  must(cudaMallocAsync(&three, 3 * MiB, 0), "cudaMallocAsync");
  must(cuMemAllocAsync(&five, 5 * MiB, 0), "cuMemAllocAsync");
  must(cudaFreeAsync(three, 0), "cudaFreeAsync");
  must(cuMemFreeAsync(five, 0), "cuMemFreeAsync");
  memstage_stage_end();

  memstage_stage_begin("vmm");
  must(cuMemCreate(&handle, 16 * MiB, 0, 0), "cuMemCreate");
  must(cuMemRelease(handle), "cuMemRelease");
  must(cuMemAllocManaged(&managed, 1 * MiB, 1), "cuMemAllocManaged");
  memstage_stage_end();

  memstage_stage_begin("leak");
  must(cuMemAllocPitch_v2(&pitched, &pitch, 500, 2048, 4), "cuMemAllocPitch_v2");
  memstage_stage_end();

  if (fake_next_probe() != dlsym(dlopen(FAKE_NEXT_PATH, RTLD_NOW | RTLD_NOLOAD), "fake_probe_symbol")) {
    fprintf(stderr, "device_program: dlsym(RTLD_NEXT) from a library found the wrong definition\n");
    return 1;
  }
  printf("device_program: ok\n");
  return 0;
}
