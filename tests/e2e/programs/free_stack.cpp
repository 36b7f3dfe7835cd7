// e2e.free_stack: a program bug the allocator catches. The program holds 77777 bytes in
// hold_before_fault, writes out.txt, then frees an address on its stack whose "chunk
// header" reads as a huge size: glibc's free stops it with its own message ("double free
// or corruption (out)") and abort (exit 134). Traced, it must end the same way, from
// inside glibc, with the held block in the report. Truth: the held block's size.
// Usage: free_stack TRUTH_FILE
#include "e2e_common.h"

E2E_FRAME void hold_before_fault() {
  void* p = malloc(77777);
  escape(p);
  memset(p, 1, 77777);
}

E2E_FRAME void free_stack_address() {
  alignas(16) unsigned char buffer[256];
  memset(buffer, 0x11, sizeof(buffer));  // size 0x1111...10: no mmapped or arena bit
  // Through a volatile pointer: the compiler must not see (and warn about) what is freed.
  unsigned char* volatile address = buffer + 64;
  free(address);
  barrier();
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  hold_before_fault();
  static Truth truth;
  truth.add("held_bytes", 77777);
  truth.write_to(truth_file);
  const int out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  static const char line[] = "about to free a stack address\n";
  if (out < 0 || write(out, line, sizeof(line) - 1) != sizeof(line) - 1 || close(out) != 0) return 2;
  free_stack_address();
  return 0;
}
