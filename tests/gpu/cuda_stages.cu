// Device memory through the runtime, stream-ordered pools and the virtual memory
// management API, one stage each; after every step the program asks the device how much
// memory is in use (cudaMemGetInfo) and writes, per stage, the highest rise it saw over
// the first stage's start: what memstage's per-stage device peak must match.
// Built and run by device_check.sh on a machine with a GPU.
#include <cuda.h>
#include <cuda_runtime.h>
#include <memstage/stage.h>

#include <cstdio>
#include <cstdlib>
#include <string>

static size_t g_baseline_used = 0;
static size_t g_stage_peak = 0;
static std::string g_json = "{";

static size_t used_now() {
  size_t free_bytes = 0, total_bytes = 0;
  cudaDeviceSynchronize();
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) std::exit(2);
  return total_bytes - free_bytes;
}
static void note() {
  const size_t used = used_now();
  if (used > g_baseline_used && used - g_baseline_used > g_stage_peak) g_stage_peak = used - g_baseline_used;
}
static void begin(const char* name) {
  memstage_stage_begin(name);
  g_stage_peak = 0;
  note();
}
static void end(const char* name) {
  note();
  memstage_stage_end();
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s\"%s\": %zu", g_json.size() > 1 ? ", " : "", name, g_stage_peak);
  g_json += buf;
}
#define CHECK(x) do { if ((x) != 0) { std::fprintf(stderr, "%s failed\n", #x); std::exit(2); } } while (0)

int main(int argc, char** argv) {
  const size_t MiB = size_t(1) << 20;
  CHECK(cudaFree(nullptr));  // the context, before anything is measured
  g_baseline_used = used_now();

  void *a = nullptr, *b = nullptr, *c = nullptr;
  begin("runtime");
  CHECK(cudaMalloc(&a, 256 * MiB));
  note();
  CHECK(cudaMalloc(&b, 64 * MiB));
  note();
  CHECK(cudaFree(b));
  end("runtime");

  begin("async");
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMallocAsync(&c, 128 * MiB, stream));
  note();
  CHECK(cudaFreeAsync(c, stream));
  CHECK(cudaStreamSynchronize(stream));
  // Give the pool's reserve back, so the device's own figure falls as memstage's does.
  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  CHECK(cudaMemPoolTrimTo(pool, 0));
  end("async");

  begin("vmm");
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t bytes = ((96 * MiB + granularity - 1) / granularity) * granularity;
  CUmemGenericAllocationHandle handle;
  CHECK(cuMemCreate(&handle, bytes, &prop, 0));
  CUdeviceptr va;
  CHECK(cuMemAddressReserve(&va, bytes, 0, 0, 0));
  CHECK(cuMemMap(va, bytes, 0, handle, 0));
  note();
  CHECK(cuMemUnmap(va, bytes));
  CHECK(cuMemAddressFree(va, bytes));
  CHECK(cuMemRelease(handle));
  end("vmm");

  begin("free");
  CHECK(cudaFree(a));
  end("free");

  g_json += "}\n";
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (!f) return 2;
    std::fputs(g_json.c_str(), f);
    std::fclose(f);
  }
  std::printf("cuda_stages: %s", g_json.c_str());
  return 0;
}
