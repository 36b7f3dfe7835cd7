/* The floor of a counting interposer, for harness/bench/interpose_floor.sh: the forwarding
 * shim (floor_forward_shim.c) plus what stats mode counts at the least, per thread in
 * initial-exec TLS: allocations and their bytes (only those that succeed), and frees. No
 * re-entry guard, no recording switch, no other thread ever reads them: nothing a real
 * tracer could do with fewer instructions. Not a tracer. */
#include <stddef.h>

extern void* __libc_malloc(size_t size);
extern void __libc_free(void* p);

static __thread unsigned long t_allocations __attribute__((tls_model("initial-exec")));
static __thread unsigned long t_bytes_allocated __attribute__((tls_model("initial-exec")));
static __thread unsigned long t_frees __attribute__((tls_model("initial-exec")));

__attribute__((visibility("default"))) void* malloc(size_t size) {
  void* p = __libc_malloc(size);
  if (__builtin_expect(p != NULL, 1)) {
    ++t_allocations;
    t_bytes_allocated += size;
  }
  return p;
}

__attribute__((visibility("default"))) void free(void* p) {
  if (p) ++t_frees;
  __libc_free(p);
}
