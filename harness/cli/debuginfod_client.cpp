// Whether libdw may load its debuginfod client, in memstage's own process.
//
// memstage symbolizes with the debug information installed on the machine; it asks a
// debuginfod server only when the user asks for it (MEMSTAGE_DEBUGINFOD set, and then the
// servers of DEBUGINFOD_URLS): otherwise main() clears DEBUGINFOD_URLS. But libdw
// (elfutils 0.188, Debian 12's) loads its debuginfod client the first time a module has no
// debug information on the machine (libstdc++ in every C++ stack) whether or not a server
// is configured, and then asks none; loading it loads libcurl, gnutls and kerberos with it,
// about 30 libraries and 10-35 ms of every report. So with no server configured, this
// process declines that one dlopen, and libdw goes on without a client, as on a system
// without libdebuginfod. Every other dlopen is glibc's.
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

namespace {

bool debuginfod_configured() {
  const char* urls = getenv("DEBUGINFOD_URLS");
  return urls != nullptr && urls[0] != '\0';
}

bool is_debuginfod_client(const char* file) {
  const char* name = file ? strrchr(file, '/') : nullptr;
  name = name ? name + 1 : file;
  return name != nullptr && strncmp(name, "libdebuginfod.so", 16) == 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlopen(const char* file, int flags) {
  using DlopenFn = void* (*)(const char*, int);
  static const DlopenFn real_dlopen = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  if (is_debuginfod_client(file) && !debuginfod_configured()) return nullptr;
  return real_dlopen(file, flags);
}
