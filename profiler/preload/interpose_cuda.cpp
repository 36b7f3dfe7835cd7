// Device memory: the CUDA driver's and runtime's allocation entry points, put in front of
// the real ones. Each passes the call on unchanged and, when it succeeded, records the
// device block with the caller's stack (recording.h: record_device_alloc/free).
//
// How programs reach these functions, and where the tracer stands in each case:
//  * a direct call to a symbol (a program or library linked with -lcuda or -lcudart, as
//    PyTorch's libraries are): our exported definitions come first in the global scope;
//  * dlsym(handle, "cuGetProcAddress") on a dlopen'd libcuda.so.1 (what the runtime does),
//    or of any name below: our dlsym returns our function and keeps the real one;
//  * cuGetProcAddress("cuMemAlloc", ...) (how the runtime, statically linked or not, gets
//    every driver entry point): our cuGetProcAddress returns our function for the names
//    below and keeps the driver's.
//
// A runtime call (cudaMalloc) reaches the driver (cuMemAlloc) inside it: the block is
// recorded once, by the outermost call, with the program's stack. Physical memory of the
// virtual memory management API is counted where it is created (cuMemCreate, by handle)
// and released (cuMemRelease); cuMemMap/cuMemUnmap map it and allocate nothing, so they
// are left alone. Stream-ordered allocations (cuMemAllocAsync, from pools) count from the
// call that allocates to the one that frees, not while they sit in the pool's reserve.
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <atomic>

#include "profiler/preload/recording.h"
#include "profiler/preload/tracer.h"

#define MEMSTAGE_EXPORT extern "C" __attribute__((visibility("default")))

using memstage::trace::DeviceMemory;

namespace memstage::preload {
namespace {

using CUresult = int;        // CUDA_SUCCESS == 0
using cudaError_t = int;     // cudaSuccess == 0
using CUdeviceptr = uint64_t;
using CUhandle = uint64_t;   // CUmemGenericAllocationHandle
constexpr int kNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED, cudaErrorInitializationError
constexpr uint64_t kPerThreadDefaultStream = 2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

// Set while a runtime entry point (cudaMalloc, ...) runs on this thread: the driver calls
// it makes are its own, recorded once by the runtime call.
__thread int t_in_device_runtime __attribute__((tls_model("initial-exec"))) = 0;

struct RuntimeScope {
  RuntimeScope() { ++t_in_device_runtime; }
  ~RuntimeScope() { --t_in_device_runtime; }
};

// A program reaches CUDA long after its first allocation started the tracer
// (interpose.cpp): here the tracer records or it is off.
inline bool should_record() { return !t_thread.in_tracer && recording(); }
inline bool record_driver_call() { return should_record() && t_in_device_runtime == 0; }
inline bool record_runtime_call() { return should_record() && t_in_device_runtime == 1; }

void alloc_recorded(uint64_t address, uint64_t bytes, DeviceMemory kind) {
  RecordingGuard guard;
  KeepErrno keep;
  record_device_alloc(address, bytes, kind);
}

void free_recorded(uint64_t address, DeviceMemory kind) {
  RecordingGuard guard;
  KeepErrno keep;
  record_device_free(address, kind);
}

// The real dlsym, found by version: dlsym itself is ours.
using DlsymFn = void* (*)(void*, const char*);
std::atomic<DlsymFn> g_real_dlsym{nullptr};

DlsymFn real_dlsym() {
  DlsymFn f = g_real_dlsym.load(std::memory_order_relaxed);
  if (__builtin_expect(f != nullptr, 1)) return f;
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"}) {
    if ((f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", version)))) break;
  }
  g_real_dlsym.store(f, std::memory_order_relaxed);
  return f;
}

// One interposed entry point: its exported name (what dlsym is asked), the name
// cuGetProcAddress is asked (the driver's base name, "" for runtime functions), our
// function, and the real one once known.
struct EntryPoint {
  const char* symbol;
  const char* proc_name;
  bool per_thread_stream;  // the _ptsz variant cuGetProcAddress gives with that flag
  void* ours;
  std::atomic<void*> real;
};

enum Entry : int {
  kCuMemAlloc, kCuMemAllocPitch, kCuMemAllocManaged, kCuMemFree,
  kCuMemAllocAsync, kCuMemAllocAsyncPtsz, kCuMemAllocFromPoolAsync, kCuMemAllocFromPoolAsyncPtsz,
  kCuMemFreeAsync, kCuMemFreeAsyncPtsz, kCuMemCreate, kCuMemRelease,
  kCuGetProcAddress, kCuGetProcAddressV2,
  kCudaMalloc, kCudaMallocManaged, kCudaMallocPitch, kCudaMallocAsync, kCudaMallocFromPoolAsync,
  kCudaFree, kCudaFreeAsync,
  kEntryCount
};

extern EntryPoint g_entries[kEntryCount];

pthread_mutex_t g_lookup_mutex = PTHREAD_MUTEX_INITIALIZER;

struct ModuleNames {
  static constexpr int kMax = 2048;
  const char* names[kMax];
  int count;
};

int collect_module_name(dl_phdr_info* info, size_t, void* data) {
  auto* modules = static_cast<ModuleNames*>(data);
  if (info->dlpi_name && info->dlpi_name[0] && modules->count < ModuleNames::kMax) {
    modules->names[modules->count++] = info->dlpi_name;  // the link map's string
  }
  return 0;
}

// The definition of entry's symbol that is not ours. RTLD_NEXT searches the global scope;
// a runtime loaded RTLD_LOCAL (as the dependency of a Python extension) is outside it, but
// a program calling it binds to ours: ask every loaded module (outside dl_iterate_phdr's
// lock, which dlopen must not be called under).
void* find_definition(const EntryPoint& entry) {
  if (void* f = real_dlsym()(RTLD_NEXT, entry.symbol); f && f != entry.ours) return f;
  static ModuleNames modules;  // one lookup at a time: the caller holds g_lookup_mutex
  modules.count = 0;
  dl_iterate_phdr(collect_module_name, &modules);
  for (int i = 0; i < modules.count; ++i) {
    void* handle = dlopen(modules.names[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) continue;
    void* f = real_dlsym()(handle, entry.symbol);
    dlclose(handle);
    if (f && f != entry.ours) return f;
  }
  return nullptr;
}

// The real function behind entry `e`: the one dlsym or cuGetProcAddress handed out, else
// the definition of its symbol in the library the program linked against.
template <typename F>
F real(Entry e) {
  EntryPoint& entry = g_entries[e];
  void* f = entry.real.load(std::memory_order_acquire);
  if (__builtin_expect(f == nullptr, 0)) {
    RecordingGuard guard;
    pthread_mutex_lock(&g_lookup_mutex);
    if ((f = find_definition(entry))) entry.real.store(f, std::memory_order_release);
    pthread_mutex_unlock(&g_lookup_mutex);
  }
  return reinterpret_cast<F>(f);
}

// Keeps `found` as entry's real function and returns ours in its place. A lookup that
// found our own function returns it as it is; so does one that found a different real
// function than the one kept (a second driver): ours would call the first.
void* stand_in(Entry e, void* found) {
  EntryPoint& entry = g_entries[e];
  if (!found || found == entry.ours) return found;
  void* known = nullptr;
  if (entry.real.compare_exchange_strong(known, found, std::memory_order_acq_rel) || known == found) {
    return entry.ours;
  }
  return found;
}

int entry_by_symbol(const char* name) {
  for (int e = 0; e < kEntryCount; ++e) {
    if (strcmp(g_entries[e].symbol, name) == 0) return e;
  }
  return -1;
}

int entry_by_proc_name(const char* name, uint64_t flags, int cuda_version) {
  const bool per_thread = flags & kPerThreadDefaultStream;
  // cuGetProcAddress gives cuGetProcAddress_v2 to programs built for CUDA 12.
  if (strcmp(name, "cuGetProcAddress") == 0) return cuda_version >= 12000 ? kCuGetProcAddressV2 : kCuGetProcAddress;
  // Before CUDA 3.2 these names meant the 32-bit forms, which we do not stand in for.
  if (cuda_version < 3020 && (strcmp(name, "cuMemAlloc") == 0 || strcmp(name, "cuMemFree") == 0 ||
                              strcmp(name, "cuMemAllocPitch") == 0)) {
    return -1;
  }
  int match = -1;
  for (int e = 0; e < kEntryCount; ++e) {
    const EntryPoint& entry = g_entries[e];
    if (entry.proc_name[0] == '\0' || strcmp(entry.proc_name, name) != 0) continue;
    if (entry.per_thread_stream == per_thread) return e;
    match = e;  // no _ptsz variant: the one form serves both
  }
  return match;
}

// After real cuGetProcAddress: our function in place of the driver's, for our names.
void stand_in_for_proc(const char* name, void** pfn, int cuda_version, uint64_t flags) {
  if (!name || !pfn || !*pfn) return;
  const int e = entry_by_proc_name(name, flags, cuda_version);
  if (e < 0) return;
  *pfn = stand_in(static_cast<Entry>(e), *pfn);
}

}  // namespace
}  // namespace memstage::preload

using namespace memstage::preload;

// ---- the driver ----

MEMSTAGE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  auto f = real<CUresult (*)(CUdeviceptr*, size_t)>(kCuMemAlloc);
  if (!f) return kNotInitialized;
  const CUresult r = f(dptr, bytes);
  if (r == 0 && record_driver_call()) alloc_recorded(*dptr, bytes, DeviceMemory::kDevice);
  return r;
}

MEMSTAGE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width_bytes, size_t height,
                                            unsigned element_bytes) {
  auto f = real<CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned)>(kCuMemAllocPitch);
  if (!f) return kNotInitialized;
  const CUresult r = f(dptr, pitch, width_bytes, height, element_bytes);
  if (r == 0 && record_driver_call()) alloc_recorded(*dptr, *pitch * height, DeviceMemory::kDevice);
  return r;
}

MEMSTAGE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned flags) {
  auto f = real<CUresult (*)(CUdeviceptr*, size_t, unsigned)>(kCuMemAllocManaged);
  if (!f) return kNotInitialized;
  const CUresult r = f(dptr, bytes, flags);
  if (r == 0 && record_driver_call()) alloc_recorded(*dptr, bytes, DeviceMemory::kManaged);
  return r;
}

MEMSTAGE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  auto f = real<CUresult (*)(CUdeviceptr)>(kCuMemFree);
  if (!f) return kNotInitialized;
  // Before the real free: once it returns, another thread may get the same address.
  if (dptr && record_driver_call()) free_recorded(dptr, DeviceMemory::kDevice);
  return f(dptr);
}

namespace {
template <Entry kEntry>
CUresult alloc_async(CUdeviceptr* dptr, size_t bytes, void* stream) {
  auto f = real<CUresult (*)(CUdeviceptr*, size_t, void*)>(kEntry);
  if (!f) return kNotInitialized;
  const CUresult r = f(dptr, bytes, stream);
  if (r == 0 && record_driver_call()) alloc_recorded(*dptr, bytes, DeviceMemory::kAsync);
  return r;
}
template <Entry kEntry>
CUresult alloc_from_pool_async(CUdeviceptr* dptr, size_t bytes, void* pool, void* stream) {
  auto f = real<CUresult (*)(CUdeviceptr*, size_t, void*, void*)>(kEntry);
  if (!f) return kNotInitialized;
  const CUresult r = f(dptr, bytes, pool, stream);
  if (r == 0 && record_driver_call()) alloc_recorded(*dptr, bytes, DeviceMemory::kAsync);
  return r;
}
template <Entry kEntry>
CUresult free_async(CUdeviceptr dptr, void* stream) {
  auto f = real<CUresult (*)(CUdeviceptr, void*)>(kEntry);
  if (!f) return kNotInitialized;
  if (dptr && record_driver_call()) free_recorded(dptr, DeviceMemory::kAsync);
  return f(dptr, stream);
}
}  // namespace

MEMSTAGE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, void* stream) {
  return alloc_async<kCuMemAllocAsync>(dptr, bytes, stream);
}
MEMSTAGE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, void* stream) {
  return alloc_async<kCuMemAllocAsyncPtsz>(dptr, bytes, stream);
}
MEMSTAGE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, void* pool, void* stream) {
  return alloc_from_pool_async<kCuMemAllocFromPoolAsync>(dptr, bytes, pool, stream);
}
MEMSTAGE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, void* pool, void* stream) {
  return alloc_from_pool_async<kCuMemAllocFromPoolAsyncPtsz>(dptr, bytes, pool, stream);
}
MEMSTAGE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, void* stream) {
  return free_async<kCuMemFreeAsync>(dptr, stream);
}
MEMSTAGE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, void* stream) {
  return free_async<kCuMemFreeAsyncPtsz>(dptr, stream);
}

MEMSTAGE_EXPORT CUresult cuMemCreate(CUhandle* handle, size_t bytes, const void* prop, unsigned long long flags) {
  auto f = real<CUresult (*)(CUhandle*, size_t, const void*, unsigned long long)>(kCuMemCreate);
  if (!f) return kNotInitialized;
  const CUresult r = f(handle, bytes, prop, flags);
  if (r == 0 && record_driver_call()) alloc_recorded(*handle, bytes, DeviceMemory::kPhysical);
  return r;
}

MEMSTAGE_EXPORT CUresult cuMemRelease(CUhandle handle) {
  auto f = real<CUresult (*)(CUhandle)>(kCuMemRelease);
  if (!f) return kNotInitialized;
  const CUresult r = f(handle);
  // The memory goes once it is also unmapped everywhere; the program let go of it here.
  if (r == 0 && record_driver_call()) free_recorded(handle, DeviceMemory::kPhysical);
  return r;
}

MEMSTAGE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, uint64_t flags) {
  auto f = real<CUresult (*)(const char*, void**, int, uint64_t)>(kCuGetProcAddress);
  if (!f) return kNotInitialized;
  const CUresult r = f(symbol, pfn, cuda_version, flags);
  if (r == 0) stand_in_for_proc(symbol, pfn, cuda_version, flags);
  return r;
}

MEMSTAGE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, uint64_t flags,
                                             void* symbol_status) {
  auto f = real<CUresult (*)(const char*, void**, int, uint64_t, void*)>(kCuGetProcAddressV2);
  if (!f) return kNotInitialized;
  const CUresult r = f(symbol, pfn, cuda_version, flags, symbol_status);
  if (r == 0) stand_in_for_proc(symbol, pfn, cuda_version, flags);
  return r;
}

// ---- the runtime ----

MEMSTAGE_EXPORT cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  auto f = real<cudaError_t (*)(void**, size_t)>(kCudaMalloc);
  if (!f) return kNotInitialized;
  RuntimeScope scope;
  const cudaError_t r = f(ptr, bytes);
  if (r == 0 && record_runtime_call()) alloc_recorded(reinterpret_cast<uint64_t>(*ptr), bytes, DeviceMemory::kDevice);
  return r;
}

MEMSTAGE_EXPORT cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned flags) {
  auto f = real<cudaError_t (*)(void**, size_t, unsigned)>(kCudaMallocManaged);
  if (!f) return kNotInitialized;
  RuntimeScope scope;
  const cudaError_t r = f(ptr, bytes, flags);
  if (r == 0 && record_runtime_call()) alloc_recorded(reinterpret_cast<uint64_t>(*ptr), bytes, DeviceMemory::kManaged);
  return r;
}

MEMSTAGE_EXPORT cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width_bytes, size_t height) {
  auto f = real<cudaError_t (*)(void**, size_t*, size_t, size_t)>(kCudaMallocPitch);
  if (!f) return kNotInitialized;
  RuntimeScope scope;
  const cudaError_t r = f(ptr, pitch, width_bytes, height);
  if (r == 0 && record_runtime_call()) {
    alloc_recorded(reinterpret_cast<uint64_t>(*ptr), *pitch * height, DeviceMemory::kDevice);
  }
  return r;
}

MEMSTAGE_EXPORT cudaError_t cudaMallocAsync(void** ptr, size_t bytes, void* stream) {
  auto f = real<cudaError_t (*)(void**, size_t, void*)>(kCudaMallocAsync);
  if (!f) return kNotInitialized;
  RuntimeScope scope;
  const cudaError_t r = f(ptr, bytes, stream);
  if (r == 0 && record_runtime_call()) alloc_recorded(reinterpret_cast<uint64_t>(*ptr), bytes, DeviceMemory::kAsync);
  return r;
}

MEMSTAGE_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, void* pool, void* stream) {
  auto f = real<cudaError_t (*)(void**, size_t, void*, void*)>(kCudaMallocFromPoolAsync);
  if (!f) return kNotInitialized;
  RuntimeScope scope;
  const cudaError_t r = f(ptr, bytes, pool, stream);
  if (r == 0 && record_runtime_call()) alloc_recorded(reinterpret_cast<uint64_t>(*ptr), bytes, DeviceMemory::kAsync);
  return r;
}

MEMSTAGE_EXPORT cudaError_t cudaFree(void* ptr) {
  auto f = real<cudaError_t (*)(void*)>(kCudaFree);
  if (!f) return kNotInitialized;
  RuntimeScope scope;
  if (ptr && record_runtime_call()) free_recorded(reinterpret_cast<uint64_t>(ptr), DeviceMemory::kDevice);
  return f(ptr);
}

MEMSTAGE_EXPORT cudaError_t cudaFreeAsync(void* ptr, void* stream) {
  auto f = real<cudaError_t (*)(void*, void*)>(kCudaFreeAsync);
  if (!f) return kNotInitialized;
  RuntimeScope scope;
  if (ptr && record_runtime_call()) free_recorded(reinterpret_cast<uint64_t>(ptr), DeviceMemory::kAsync);
  return f(ptr, stream);
}

// ---- dlsym ----

namespace memstage::preload {
namespace {

// Only names starting "cu" can be ours: everything else goes straight to dlsym.
inline bool maybe_device_name(const char* name) { return name && name[0] == 'c' && name[1] == 'u'; }

__attribute__((noinline)) void* device_dlsym(DlsymFn real_fn, void* handle, const char* name) {
  void* found = real_fn(handle, name);
  const int e = entry_by_symbol(name);
  return e < 0 ? found : stand_in(static_cast<Entry>(e), found);
}

#define ENTRY(symbol, proc, ptsz) {#symbol, proc, ptsz, reinterpret_cast<void*>(&::symbol), {nullptr}}
EntryPoint g_entries[kEntryCount] = {
    ENTRY(cuMemAlloc_v2, "cuMemAlloc", false),
    ENTRY(cuMemAllocPitch_v2, "cuMemAllocPitch", false),
    ENTRY(cuMemAllocManaged, "cuMemAllocManaged", false),
    ENTRY(cuMemFree_v2, "cuMemFree", false),
    ENTRY(cuMemAllocAsync, "cuMemAllocAsync", false),
    ENTRY(cuMemAllocAsync_ptsz, "cuMemAllocAsync", true),
    ENTRY(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", false),
    ENTRY(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", true),
    ENTRY(cuMemFreeAsync, "cuMemFreeAsync", false),
    ENTRY(cuMemFreeAsync_ptsz, "cuMemFreeAsync", true),
    ENTRY(cuMemCreate, "cuMemCreate", false),
    ENTRY(cuMemRelease, "cuMemRelease", false),
    ENTRY(cuGetProcAddress, "", false),
    ENTRY(cuGetProcAddress_v2, "", false),
    ENTRY(cudaMalloc, "", false),
    ENTRY(cudaMallocManaged, "", false),
    ENTRY(cudaMallocPitch, "", false),
    ENTRY(cudaMallocAsync, "", false),
    ENTRY(cudaMallocFromPoolAsync, "", false),
    ENTRY(cudaFree, "", false),
    ENTRY(cudaFreeAsync, "", false),
};
#undef ENTRY

}  // namespace
}  // namespace memstage::preload

// dlsym(RTLD_NEXT or RTLD_DEFAULT, ...) searches relative to the *caller's* object, which
// glibc learns from its return address: those lookups, and every lookup of a name that is
// not ours, leave by a tail call, so glibc sees the program's return address, never ours.
// Only a lookup in a given library (dlopen's handle) can find a real entry point that
// needs our stand-in: RTLD_DEFAULT finds our exported one first anyway, and whoever asks
// RTLD_NEXT for the next definition wants the real one.
MEMSTAGE_EXPORT __attribute__((optimize("O2", "optimize-sibling-calls"))) void* dlsym(void* handle,
                                                                                    const char* name) {
  const DlsymFn real_fn = real_dlsym();
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || !maybe_device_name(name)) return real_fn(handle, name);
  return device_dlsym(real_fn, handle, name);
}
