// e2e.dlopen: dlopen()s the plugin given on the command line, calls its plugin_alloc()
// (which leaks 123457 bytes), then dlclose()s it. The report must name plugin_alloc,
// plugin.cpp, the line and the .so, although the module is gone by the end of the run.
// Usage: dlopener TRUTH PLUGIN_SO
#include <dlfcn.h>

#include "e2e_common.h"

using PluginAlloc = void* (*)();
using PluginLine = int (*)();

E2E_FRAME void* call_plugin(PluginAlloc fn) {
  void* p = fn();
  escape(p);
  return p;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  if (argc < 3) return 2;
  void* handle = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
    return 3;
  }
  auto alloc = reinterpret_cast<PluginAlloc>(dlsym(handle, "plugin_alloc"));
  auto line = reinterpret_cast<PluginLine>(dlsym(handle, "plugin_alloc_line"));
  if (!alloc || !line) return 4;
  call_plugin(alloc);
  const int plugin_line = line();
  const bool closed = dlclose(handle) == 0;
  static Truth truth;
  truth.add("plugin_line", plugin_line);
  truth.add_str("plugin_source", "plugin.cpp");
  truth.add("dlclosed", closed ? 1 : 0);
  truth.write_to(truth_file);
  return 0;
}
