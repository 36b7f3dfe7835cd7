/* e2e.early_alloc: allocations made by a library's constructor, which ld.so runs before
 * the preload's own (as gnutls and libtasn1 build their tables in cmake). The library
 * (early_lib.c) keeps a 107000-byte table for good (a leak) and a 55555-byte block that
 * main frees. The report must see both: the table as a leak from early_table_init, the
 * block's free as the free of a block it knows.
 * Usage: early_alloc TRUTH_FILE */
#include <stdio.h>
#include <stdlib.h>

extern unsigned char* early_table;
extern void* early_scratch;

int main(int argc, char** argv) {
  if (argc < 2 || !early_table || !early_scratch) return 2;
  printf("table[1000] = %d\n", early_table[1000]);
  free(early_scratch);
  FILE* truth = fopen(argv[1], "w");
  if (!truth) return 3;
  fprintf(truth, "{\"table_bytes\": 107000, \"scratch_bytes\": 55555}\n");
  return fclose(truth) == 0 ? 0 : 4;
}
