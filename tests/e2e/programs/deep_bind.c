/* e2e.deep_bind: a plugin loaded RTLD_DEEPBIND (its own dependencies, libc included, come
 * first for its symbols). The program allocates 5 MB, hands it to the plugin, which
 * allocates 3 MB (the peak: 8 MB held), frees the program's block, leaks 1234 bytes and
 * returns its 3 MB for the program to free. The report must see the plugin's allocations
 * and frees: no 5 MB false leak, the 1234-byte leak from plugin_leak, a peak of 8 MB.
 * Usage: deep_bind TRUTH_FILE PLUGIN_SO */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void* (*Exchange)(void*);

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  void* handle = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!handle) {
    fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
    return 3;
  }
  Exchange exchange = (Exchange)dlsym(handle, "plugin_exchange");
  if (!exchange) return 4;
  void* mine = malloc(5000000);
  if (!mine) return 5;
  memset(mine, 1, 5000000);
  unsigned char* theirs = exchange(mine);
  if (!theirs) return 6;
  printf("the plugin's block starts with %d\n", theirs[0]);
  free(theirs);
  FILE* truth = fopen(argv[1], "w");
  if (!truth) return 7;
  fprintf(truth, "{\"peak_bytes\": %d, \"leaked_bytes\": %d}\n", 8000000, 1234);
  return fclose(truth) == 0 ? 0 : 8;
}
