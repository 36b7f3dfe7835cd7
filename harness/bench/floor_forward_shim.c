/* The floor of any malloc interposer, for harness/bench/interpose_floor.sh: an LD_PRELOAD
 * library whose malloc and free only pass the call on to glibc's. What a run under it
 * costs over an untraced run is the price of the interposition itself (the extra call and
 * jump per call), before a tracer does anything. Not a tracer: glibc only (__libc_malloc),
 * and the rest of the malloc family is left to libc. */
#include <stddef.h>

extern void* __libc_malloc(size_t size);
extern void __libc_free(void* p);

__attribute__((visibility("default"))) void* malloc(size_t size) { return __libc_malloc(size); }

__attribute__((visibility("default"))) void free(void* p) { __libc_free(p); }
