// e2e.vfork: the way Python's subprocess and multiprocessing's spawn start programs. The
// parent holds 16 MiB, then starts two children with vfork: each closes every descriptor
// from 3 up (closefrom) and execs, one a program that does not exist (the child then
// _exits 127), one /bin/true. Then the parent allocates 64 MiB more, writes out.txt and
// frees it all. Truth: the peak the parent held, the pids of the children.
// Usage: vfork_exec TRUTH_FILE
#include <sys/wait.h>

#include "e2e_common.h"

constexpr size_t kFirstBytes = 16u << 20;
constexpr size_t kSecondBytes = 64u << 20;

E2E_FRAME void* hold(size_t bytes) {
  void* p = malloc(bytes);
  if (p) memset(p, 7, bytes);
  escape(p);
  return p;
}

// Returns the child's exit status, or -1.
E2E_FRAME int vfork_exec(const char* path, pid_t& pid) {
  char* const argv[] = {const_cast<char*>(path), nullptr};
  pid = vfork();
  if (pid == 0) {
    closefrom(3);
    execv(path, argv);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  void* first = hold(kFirstBytes);
  pid_t missing_pid = 0, true_pid = 0;
  const int missing_status = vfork_exec("/nonexistent/e2e-program", missing_pid);
  const int true_status = vfork_exec("/bin/true", true_pid);
  void* second = hold(kSecondBytes);
  FILE* out = fopen("out.txt", "w");
  if (!out) return 4;
  fprintf(out, "missing program: exit %d\n/bin/true: exit %d\n", missing_status, true_status);
  for (int i = 0; i < 1000; ++i) fprintf(out, "line %d %d\n", i, static_cast<unsigned char*>(second)[i * 1000]);
  if (fclose(out) != 0) return 5;
  printf("children: %d %d\n", missing_status, true_status);
  free(second);
  free(first);
  static Truth truth;
  truth.add_u("peak_bytes", kFirstBytes + kSecondBytes);
  truth.add("missing_pid", missing_pid);
  truth.add("true_pid", true_pid);
  truth.add("missing_status", missing_status);
  truth.add("true_status", true_status);
  truth.write_to(truth_file);
  return missing_status == 127 && true_status == 0 ? 0 : 6;
}
