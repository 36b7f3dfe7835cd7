/* Defines fake_probe_symbol after libfake_cuda.so: dlsym(RTLD_NEXT, "fake_probe_symbol")
 * from libfake_probe.so must find this one (it is next after the caller). */
int fake_probe_symbol(void) { return 2; }
