/* Marks its stages through the documented names alone, declared here the way a program
 * in another language declares a C function it expects to find at run time: no
 * <memstage/stage.h>, nothing linked. Weak, so the program also runs without the tracer.
 *
 * Stage "load" allocates and keeps 3,000,000 bytes in one block; stage "work" allocates
 * 5,000,000 bytes and frees them. Exit status 3 when the names are not found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void memstage_stage_begin(const char* name) __attribute__((weak));
void memstage_stage_end(void) __attribute__((weak));

int main(void) {
  if (!memstage_stage_begin || !memstage_stage_end) {
    fputs("stage_abi: memstage_stage_begin/end not found\n", stderr);
    return 3;
  }
  memstage_stage_begin("load");
  char* kept = malloc(3000000);
  memset(kept, 1, 3000000);
  memstage_stage_end();

  memstage_stage_begin("work");
  /* volatile: the compiler may not drop a malloc/free pair it can see through. */
  char* volatile scratch = malloc(5000000);
  memset(scratch, 2, 5000000);
  free(scratch);
  memstage_stage_end();

  printf("stage_abi: %d\n", kept[2999999]);
  free(kept);
  return 0;
}
