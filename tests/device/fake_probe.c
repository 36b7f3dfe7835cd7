/* Asks for the definition after its own: glibc finds it from dlsym's return address, which
 * the tracer's dlsym must leave pointing here. */
#include <dlfcn.h>
int fake_probe_symbol(void) { return 3; }
void* fake_next_probe(void) { return dlsym(RTLD_NEXT, "fake_probe_symbol"); }
