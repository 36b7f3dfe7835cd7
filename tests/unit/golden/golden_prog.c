/* The program tests/unit/golden/trace.mst was recorded from (gcc -O2 -g; memstage run). */
#include <stdlib.h>
#include <string.h>
#include <memstage/stage.h>
static void* volatile keep[64];
int main(void) {
  memstage_stage_begin("load");
  for (int i = 0; i < 32; ++i) keep[i] = malloc(1000 + i);
  memstage_stage_begin("parse");
  char* p = malloc(100);
  for (int i = 0; i < 10; ++i) { p = realloc(p, 100 << i); memset(p, 1, 100 << i); }
  keep[40] = p;
  memstage_stage_end();
  for (int i = 0; i < 16; ++i) free(keep[i]);
  memstage_stage_end();
  memstage_stage_begin("train");
  keep[41] = calloc(100, 100);
  free(keep[41]);
  keep[42] = aligned_alloc(64, 640);
  memstage_stage_end();
  return 0;
}
