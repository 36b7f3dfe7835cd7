/* A stand-in for the CUDA driver (libcuda.so.1) with the allocation entry points, backed by
 * host memory from a static arena (so that none of it shows up in the heap or mmap
 * figures), for the device tests on machines without a GPU. cuGetProcAddress hands out
 * these same functions by their base names, as the real driver does. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

#define ARENA_BYTES (256u << 20)
static unsigned char arena[ARENA_BYTES] __attribute__((aligned(4096)));
static size_t arena_used;
static uint64_t next_handle = 1;

/* Never reused: the tests allocate less than the arena. */
static CUresult take(CUdeviceptr* dptr, size_t bytes) {
  const size_t rounded = (bytes + 511) & ~(size_t)511;
  if (!dptr || arena_used + rounded > ARENA_BYTES) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *dptr = (CUdeviceptr)(uintptr_t)(arena + arena_used);
  arena_used += rounded;
  return 0;
}

static CUresult give_back(CUdeviceptr dptr) {
  const unsigned char* p = (const unsigned char*)(uintptr_t)dptr;
  return p >= arena && p < arena + ARENA_BYTES ? 0 : 1; /* CUDA_ERROR_INVALID_VALUE */
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) { return take(dptr, bytes); }
CUresult cuMemFree_v2(CUdeviceptr dptr) { return give_back(dptr); }
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned flags) { (void)flags; return take(dptr, bytes); }
CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned element) {
  (void)element;
  *pitch = (width + 511) & ~(size_t)511;
  return take(dptr, *pitch * height);
}
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, void* stream) { (void)stream; return take(dptr, bytes); }
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, void* stream) { (void)stream; return take(dptr, bytes); }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, void* pool, void* stream) {
  (void)pool; (void)stream;
  return take(dptr, bytes);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, void* stream) { (void)stream; return give_back(dptr); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, void* stream) { (void)stream; return give_back(dptr); }
CUresult cuMemCreate(uint64_t* handle, size_t bytes, const void* prop, unsigned long long flags) {
  (void)bytes; (void)prop; (void)flags;
  *handle = next_handle++;
  return 0;
}
CUresult cuMemRelease(uint64_t handle) { return handle && handle < next_handle ? 0 : 1; }

struct Proc { const char* name; void* plain; void* per_thread; };
static const struct Proc procs[] = {
    {"cuMemAlloc", (void*)cuMemAlloc_v2, 0},
    {"cuMemFree", (void*)cuMemFree_v2, 0},
    {"cuMemAllocManaged", (void*)cuMemAllocManaged, 0},
    {"cuMemAllocPitch", (void*)cuMemAllocPitch_v2, 0},
    {"cuMemAllocAsync", (void*)cuMemAllocAsync, (void*)cuMemAllocAsync_ptsz},
    {"cuMemAllocFromPoolAsync", (void*)cuMemAllocFromPoolAsync, 0},
    {"cuMemFreeAsync", (void*)cuMemFreeAsync, (void*)cuMemFreeAsync_ptsz},
    {"cuMemCreate", (void*)cuMemCreate, 0},
    {"cuMemRelease", (void*)cuMemRelease, 0},
};

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  (void)version;
  for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); ++i) {
    if (strcmp(procs[i].name, symbol) != 0) continue;
    *pfn = (flags & 2) && procs[i].per_thread ? procs[i].per_thread : procs[i].plain;
    if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
    return 0;
  }
  if (strcmp(symbol, "cuGetProcAddress") == 0) {
    *pfn = (void*)cuGetProcAddress_v2;
    return 0;
  }
  *pfn = 0;
  if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return 500;              /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, 0);
}

