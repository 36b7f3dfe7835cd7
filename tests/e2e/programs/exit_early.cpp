// e2e._exit: keeps 4 blocks of 66666 bytes from leak_before_exit(), then leaves with
// _exit(3): no atexit handlers, no destructors, no stdio flush.
#include "e2e_common.h"

E2E_FRAME void leak_before_exit(int i) {
  void* p = malloc(66666);
  escape(p);
  memset(p, i, 66666);
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  for (int i = 0; i < 4; ++i) leak_before_exit(i);
  static Truth truth;
  truth.add("blocks", 4);
  truth.add("size", 66666);
  truth.write_to(truth_file);
  _exit(3);
}
