/* The plugin of e2e.deep_bind, loaded RTLD_DEEPBIND. */
#include <stdlib.h>
#include <string.h>

void* volatile g_plugin_kept;

__attribute__((noipa)) void plugin_leak(void) {
  g_plugin_kept = malloc(1234);
  memset(g_plugin_kept, 2, 1234);
}

void* plugin_exchange(void* from_program) {
  unsigned char* block = malloc(3000000);
  if (block) memset(block, 3, 3000000);
  free(from_program);
  plugin_leak();
  return block;
}
