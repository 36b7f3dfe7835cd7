// e2e.fork: the parent allocates 123460 bytes in parent_alloc(), forks; the child
// allocates 123458 bytes in child_alloc() (called from fork_and_alloc()) and exits; the
// parent waits for it. Both keep their blocks (leaks the reports must show). Truth: the
// parent's and the child's pids.
#include <sys/wait.h>

#include "e2e_common.h"

E2E_FRAME void parent_alloc() {
  void* p = malloc(123460);
  escape(p);
  memset(p, 1, 123460);
}

E2E_FRAME void child_alloc() {
  void* p = malloc(123458);
  escape(p);
  memset(p, 2, 123458);
}

E2E_FRAME pid_t fork_and_alloc() {
  const pid_t pid = fork();
  if (pid == 0) {
    child_alloc();
    exit(0);
  }
  return pid;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  parent_alloc();
  const pid_t child = fork_and_alloc();
  if (child < 0) return 2;
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 3;
  static Truth truth;
  truth.add("parent_pid", getpid());
  truth.add("child_pid", child);
  truth.write_to(truth_file);
  return 0;
}
