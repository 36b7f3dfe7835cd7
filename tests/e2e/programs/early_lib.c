/* The library of e2e.early_alloc: its constructor allocates before the preload's runs. */
#include <stdlib.h>
#include <string.h>

unsigned char* early_table;
void* early_scratch;

__attribute__((noipa)) void early_table_init(void) {
  early_table = malloc(107000);
  if (early_table) memset(early_table, 9, 107000);
  early_scratch = malloc(55555);
}

__attribute__((constructor)) static void early_constructor(void) { early_table_init(); }
