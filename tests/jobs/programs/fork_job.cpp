// jobs.fork_modes: a DataLoader-style job. The parent holds a 100 MiB "dataset" of 1 MiB
// blocks and 8 MiB of 4 KiB records, and forks two workers; each frees 5 of the blocks and
// half the records it inherited and holds 2 MiB of its own; all hold at once for 300 ms.
// The job holds 108 + 2 x 2 MiB: an inherited block counts once (the parent's), and a
// worker's free of one, large or small, leaves the parent's in place.
#include <sys/wait.h>

#include <ctime>

#include "../../e2e/programs/e2e_common.h"

constexpr size_t kMiB = 1 << 20;
constexpr int kBlocks = 100, kFreedByWorker = 5, kWorkers = 2;
constexpr size_t kRecordBytes = 4096;
constexpr int kRecords = 2048, kRecordsFreedByWorker = kRecords / 2;
constexpr size_t kWorkerBytes = 2 * kMiB;

E2E_FRAME void* dataset_block() {
  void* p = malloc(kMiB);
  escape(p);
  memset(p, 1, kMiB);
  return p;
}

E2E_FRAME void* record() {
  void* p = malloc(kRecordBytes);
  escape(p);
  memset(p, 3, kRecordBytes);
  return p;
}

E2E_FRAME void worker(int ready_fd, int go_fd, void** dataset, void** records) {
  for (int i = 0; i < kFreedByWorker; ++i) free(dataset[i]);
  for (int i = 0; i < kRecordsFreedByWorker; ++i) free(records[i]);
  void* mine = malloc(kWorkerBytes);
  escape(mine);
  memset(mine, 2, kWorkerBytes);
  (void)!::write(ready_fd, "r", 1);
  char c;
  while (::read(go_fd, &c, 1) > 0) {
  }
  free(mine);
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  static void* dataset[kBlocks];
  for (int i = 0; i < kBlocks; ++i) dataset[i] = dataset_block();
  static void* records[kRecords];
  for (int i = 0; i < kRecords; ++i) records[i] = record();
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) return 2;
  pid_t pids[kWorkers];
  for (int i = 0; i < kWorkers; ++i) {
    if ((pids[i] = fork()) < 0) return 3;
    if (pids[i] == 0) {
      close(ready[0]);
      close(go[1]);
      worker(ready[1], go[0], dataset, records);
      _exit(0);
    }
  }
  close(ready[1]);
  close(go[0]);
  for (int i = 0; i < kWorkers; ++i) {
    char c;
    if (::read(ready[0], &c, 1) != 1) return 4;
  }
  const timespec hold{0, 300 * 1000 * 1000};
  nanosleep(&hold, nullptr);
  close(go[1]);
  for (int i = 0; i < kWorkers; ++i) {
    int status = 0;
    if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
  }
  for (int i = 0; i < kBlocks; ++i) free(dataset[i]);
  for (int i = 0; i < kRecords; ++i) free(records[i]);
  static Truth truth;
  truth.add("parent_pid", getpid());
  const size_t dataset_bytes = kBlocks * kMiB + kRecords * kRecordBytes;
  truth.add_u("inherited_bytes", dataset_bytes);
  truth.add_u("job_heap_bytes", dataset_bytes + kWorkers * kWorkerBytes);
  truth.add_u("inherited_freed_bytes", kWorkers * (kFreedByWorker * kMiB + kRecordsFreedByWorker * kRecordBytes));
  truth.write_to(truth_file);
  return 0;
}
