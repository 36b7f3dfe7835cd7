/* A stand-in for a Python extension built against the CUDA runtime (as PyTorch's libraries
 * are): it links the runtime, and the program loads it with dlopen(RTLD_LOCAL), so the
 * runtime is outside the global scope. Its call to cudaMalloc still binds to the tracer's
 * (the preload comes first), which must then find the runtime's own definition among the
 * loaded modules, not through RTLD_NEXT. */
#include <stddef.h>

int cudaMalloc(void**, size_t);
int cudaFree(void*);

int fake_extension_alloc_and_free(size_t bytes) {
  void* p = 0;
  int e = cudaMalloc(&p, bytes);
  if (e) return e;
  return cudaFree(p);
}
