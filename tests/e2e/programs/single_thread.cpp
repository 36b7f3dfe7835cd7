// e2e.single_thread: a program with one thread keeps one under the tracer, as Chromium's
// zygote requires before it forks (it counts /proc/self/task's links and dies otherwise).
// The program counts its threads (link count of /proc/self/task, less . and ..) at start,
// after 20000 allocations, inside a stage, in a forked child that allocates and writes a
// file, and after all that; any count but 1 makes it exit 3 (4 in the child). Then a
// second thread allocates (the tracer's writer may start now), and a 64 MiB spike of
// memory the tracer never sees (mmap and munmap as raw system calls) is touched and
// dropped at once: the report's peak RSS must still be at least the kernel's high-water
// mark (VmHWM), read by the program last.
// Usage: single_thread TRUTH_FILE
#include <memstage/stage.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "e2e_common.h"

constexpr int kBlocks = 20000;
constexpr size_t kSpikeBytes = 64u << 20;

long threads_now() {
  struct stat st;
  if (stat("/proc/self/task", &st) != 0) return -1;
  return static_cast<long>(st.st_nlink) - 2;
}

void expect_one_thread(const char* where, int status) {
  const long n = threads_now();
  if (n == 1) return;
  fprintf(stderr, "%s: %ld threads\n", where, n);
  _exit(status);
}

E2E_FRAME unsigned long churn(int blocks) {
  unsigned long sum = 0;
  void* kept[64] = {};
  for (int i = 0; i < blocks; ++i) {
    auto* p = static_cast<unsigned char*>(malloc(16 + i % 1000));
    if (!p) _exit(5);
    p[0] = static_cast<unsigned char>(i);
    sum += p[0];
    free(kept[i % 64]);
    kept[i % 64] = p;
  }
  for (void* p : kept) free(p);
  return sum;
}

void* thread_work(void*) { return reinterpret_cast<void*>(churn(kBlocks)); }

// Touched and unmapped by raw system calls: no event of the tracer's sees it.
void rss_spike() {
  auto* p = reinterpret_cast<unsigned char*>(
      syscall(SYS_mmap, nullptr, kSpikeBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) _exit(6);
  memset(p, 1, kSpikeBytes);
  syscall(SYS_munmap, p, kSpikeBytes);
}

unsigned long long high_water_bytes() {
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  static char buf[8192];
  const ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);
  if (fd >= 0) close(fd);
  buf[n > 0 ? n : 0] = '\0';
  const char* line = strstr(buf, "VmHWM:");
  return line ? strtoull(line + 6, nullptr, 10) * 1024 : 0;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  expect_one_thread("start", 3);
  unsigned long sum = churn(kBlocks);
  expect_one_thread("after allocating", 3);
  memstage_stage_begin("work");
  expect_one_thread("stage begun", 3);
  sum += churn(kBlocks);
  memstage_stage_end();
  expect_one_thread("stage ended", 3);

  const pid_t child = fork();
  if (child == 0) {
    expect_one_thread("child", 4);
    FILE* out = fopen("child.txt", "w");
    if (!out) _exit(7);
    fprintf(out, "child: %lu\n", churn(kBlocks));
    expect_one_thread("child after allocating", 4);
    _exit(fclose(out) == 0 ? 0 : 8);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return 2;
  expect_one_thread("after fork", 3);

  pthread_t thread;
  void* thread_sum = nullptr;
  if (pthread_create(&thread, nullptr, thread_work, nullptr) != 0 || pthread_join(thread, &thread_sum) != 0) return 9;
  rss_spike();
  printf("sum %lu, thread %lu, child status %d\n", sum, reinterpret_cast<unsigned long>(thread_sum),
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  static Truth truth;
  truth.add_u("high_water_bytes", high_water_bytes());
  truth.add_u("spike_bytes", kSpikeBytes);
  truth.write_to(truth_file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 10;
}
