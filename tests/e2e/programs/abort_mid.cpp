// e2e.abort: keeps 5 blocks of 77777 bytes from leak_before_abort(), writes its truth,
// then abort()s half-way; the 88888-byte blocks after it are never allocated. With
// "threaded" after the truth file, a second thread first churns 500k blocks: the abort
// comes while the tracer's compressor thread has chunks to write.
#include "e2e_common.h"

E2E_FRAME void leak_before_abort(int i) {
  void* p = malloc(77777);
  escape(p);
  memset(p, i, 77777);
}

E2E_FRAME void leak_after_abort() {
  void* p = malloc(88888);
  escape(p);
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  if (argc > 2 && strcmp(argv[2], "threaded") == 0) churn_in_a_second_thread(500'000);
  for (int i = 0; i < 5; ++i) leak_before_abort(i);
  static Truth truth;
  truth.add("blocks", 5);
  truth.add("size", 77777);
  truth.write_to(truth_file);
  abort();
  for (int i = 0; i < 5; ++i) leak_after_abort();
  return 0;
}
