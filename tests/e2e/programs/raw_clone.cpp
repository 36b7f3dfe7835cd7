// e2e.raw_clone: a child made with the raw clone system call, as Chromium's zygote
// forks: no fork handlers run in it. Each of three children allocates enough to fill any
// buffer (300000 blocks), writes its own file, and ends its own way: _exit, exit, return
// from a function that execs /bin/true. The parent waits for each (an alarm ends the
// test if one hangs), then allocates and frees 1 MiB in parent_alloc.
// Usage: raw_clone TRUTH_FILE
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "e2e_common.h"

constexpr int kChildBlocks = 300000;

E2E_FRAME void child_work(int which) {
  char name[32];
  snprintf(name, sizeof(name), "child%d.txt", which);
  FILE* out = fopen(name, "w");
  if (!out) _exit(20);
  unsigned long sum = 0;
  for (int i = 0; i < kChildBlocks; ++i) {
    auto* p = static_cast<unsigned char*>(malloc(16 + i % 512));
    if (!p) _exit(21);
    p[0] = static_cast<unsigned char>(i);
    sum += p[0];
    free(p);
  }
  fprintf(out, "child %d: %lu\n", which, sum);
  if (fclose(out) != 0) _exit(22);
}

E2E_FRAME void parent_alloc() {
  void* p = malloc(1 << 20);
  escape(p);
  memset(p, 3, 1 << 20);
  free(p);
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  alarm(20);
  int statuses[3] = {-1, -1, -1};
  for (int which = 0; which < 3; ++which) {
    const long pid = syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr);
    if (pid == 0) {
      child_work(which);
      if (which == 0) _exit(10);
      if (which == 1) exit(11);
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(23);
    }
    int status = 0;
    if (pid < 0 || waitpid(static_cast<pid_t>(pid), &status, 0) != pid || !WIFEXITED(status)) return 2;
    statuses[which] = WEXITSTATUS(status);
  }
  parent_alloc();
  printf("children: %d %d %d\n", statuses[0], statuses[1], statuses[2]);
  static Truth truth;
  truth.add("parent_pid", getpid());
  truth.add("status_exit", statuses[1]);
  truth.write_to(truth_file);
  return statuses[0] == 10 && statuses[1] == 11 && statuses[2] == 0 ? 0 : 3;
}
