// Grows its heap by 8 MiB touched blocks inside stage "grow" up to 256 MiB, then frees.
#include <memstage/stage.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__attribute__((noinline)) char* grow_block(size_t bytes) {
  char* p = static_cast<char*>(malloc(bytes));
  memset(p, 1, bytes);  // touched: it counts in RSS
  return p;
}

int main() {
  std::vector<char*> blocks;
  {
    memstage::Stage stage{"grow"};
    for (int i = 0; i < 32; ++i) blocks.push_back(grow_block(8u << 20));
  }
  for (char* p : blocks) free(p);
  printf("finished\n");
  return 0;
}
