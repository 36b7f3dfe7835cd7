// e2e plugin, built as a MODULE and dlopen'ed by dlopener and stacks: plugin_alloc()
// allocates 123457 bytes and keeps them (a leak the report must place here, in this
// file, at the line plugin_alloc_line() returns, in this .so).
#include "e2e_common.h"

namespace {
int g_line;
void* g_kept;
}  // namespace

extern "C" E2E_FRAME void* plugin_alloc() {
  g_line = __LINE__; void* p = malloc(123457);
  escape(p);
  memset(p, 7, 123457);
  g_kept = p;
  return p;
}

extern "C" int plugin_alloc_line() { return g_line; }
