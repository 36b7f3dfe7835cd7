// jobs.workers: a parent holding 40 MiB forks three workers that hold 16, 24 and 32 MiB;
// all four hold at once (the workers say so through a pipe, the parent keeps them there
// for 300 ms, several sampling intervals), then the workers free and exit. Truth: the
// pids, each process's bytes and their sum, the job's heap at that instant. The parent's
// block is inherited by each worker: its pages are shared copy-on-write, counted in every
// worker's RSS, and its bytes were requested once (by the parent).
#include <sys/wait.h>

#include <ctime>

#include "../../e2e/programs/e2e_common.h"

constexpr size_t kMiB = 1 << 20;
constexpr size_t kParentBytes = 40 * kMiB;
constexpr size_t kWorkerBytes[] = {16 * kMiB, 24 * kMiB, 32 * kMiB};
constexpr int kWorkers = 3;

E2E_FRAME void* parent_hold() {
  void* p = malloc(kParentBytes);
  escape(p);
  memset(p, 1, kParentBytes);
  return p;
}

E2E_FRAME void* worker_hold(size_t bytes) {
  void* p = malloc(bytes);
  escape(p);
  memset(p, 2, bytes);
  return p;
}

E2E_FRAME void worker(int index, int ready_fd, int go_fd, const void* inherited) {
  void* mine = worker_hold(kWorkerBytes[index]);
  // Read the inherited block: its pages stay shared with the parent (no copy).
  volatile unsigned sum = 0;
  for (size_t i = 0; i < kParentBytes; i += 4096) sum += static_cast<const unsigned char*>(inherited)[i];
  (void)!::write(ready_fd, "r", 1);
  char c;
  while (::read(go_fd, &c, 1) > 0) {
  }
  free(mine);
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  void* held = parent_hold();
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) return 2;
  pid_t pids[kWorkers];
  for (int i = 0; i < kWorkers; ++i) {
    pids[i] = fork();
    if (pids[i] < 0) return 3;
    if (pids[i] == 0) {
      close(ready[0]);
      close(go[1]);
      worker(i, ready[1], go[0], held);
      _exit(0);
    }
  }
  close(ready[1]);
  close(go[0]);
  for (int i = 0; i < kWorkers; ++i) {
    char c;
    if (::read(ready[0], &c, 1) != 1) return 4;
  }
  // Every process holds its bytes now.
  const timespec hold{0, 300 * 1000 * 1000};
  nanosleep(&hold, nullptr);
  close(go[1]);
  for (int i = 0; i < kWorkers; ++i) {
    int status = 0;
    if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
  }
  free(held);
  static Truth truth;
  truth.add("parent_pid", getpid());
  char list[128];
  snprintf(list, sizeof(list), "[%d, %d, %d]", pids[0], pids[1], pids[2]);
  truth.add_raw("worker_pids", list);
  snprintf(list, sizeof(list), "[%zu, %zu, %zu]", kWorkerBytes[0], kWorkerBytes[1], kWorkerBytes[2]);
  truth.add_raw("worker_bytes", list);
  truth.add_u("parent_bytes", kParentBytes);
  truth.add_u("job_heap_bytes", kParentBytes + kWorkerBytes[0] + kWorkerBytes[1] + kWorkerBytes[2]);
  truth.write_to(truth_file);
  return 0;
}
