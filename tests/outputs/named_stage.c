/* outputs.*'s program: one stage of a given name, a known allocation, a given exit status.
 *   named_stage STAGE_NAME EXIT_CODE [KIB] [ANY MORE ARGUMENTS ARE IGNORED]
 * Allocates KIB kibibytes (default 64) inside the stage, frees them, exits EXIT_CODE. */
#include <memstage/stage.h>

#include <stdlib.h>
#include <string.h>

/* Through a volatile pointer, so that the compiler cannot elide the malloc/free pair. */
static char* volatile g_block;

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "work";
  const int exit_code = argc > 2 ? atoi(argv[2]) : 0;
  const size_t bytes = (size_t)(argc > 3 ? atol(argv[3]) : 64) << 10;
  memstage_stage_begin(name);
  g_block = malloc(bytes);
  memset(g_block, 1, bytes);
  free(g_block);
  memstage_stage_end();
  return exit_code;
}
