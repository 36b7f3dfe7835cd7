// e2e.fork_threads: the main thread forks FORKS times while kWorkers other threads
// allocate and free without pause. Each child keeps kChildBytes from child_alloc() and
// exits through exit() (its tracer writes its trace's end); the parent waits for each, and
// a child that does not end within 10 s is a deadlock (the tracer's locks, taken by a
// worker at the moment of fork, held in the child by no thread): exit status 4.
// Truth: the parent's pid, the children's pids and the workers' allocation calls.
// Usage: fork_threads TRUTH FORKS
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>

#include "e2e_common.h"

namespace {

constexpr int kWorkers = 4;
constexpr size_t kChildBytes = 345678;
constexpr int kMaxForks = 64;
std::atomic<bool> g_stop{false};
std::atomic<long long> g_worker_allocations{0};

}  // namespace

E2E_FRAME void* worker(void* seed_pointer) {
  unsigned seed = static_cast<unsigned>(reinterpret_cast<uintptr_t>(seed_pointer));
  void* kept[32] = {};
  long long calls = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    const int slot = static_cast<int>(rand_r(&seed) % 32);
    free(kept[slot]);
    kept[slot] = malloc(16 + rand_r(&seed) % 4096);
    escape(kept[slot]);
    ++calls;
  }
  for (void* p : kept) free(p);
  g_worker_allocations += calls;
  return nullptr;
}

E2E_FRAME void child_alloc() {
  void* p = malloc(kChildBytes);
  escape(p);
  memset(p, 3, kChildBytes);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int forks = atoi(argv[2]);
  if (forks < 1 || forks > kMaxForks) return 2;
  pthread_t workers[kWorkers];
  for (int i = 0; i < kWorkers; ++i)
    if (pthread_create(&workers[i], nullptr, worker, reinterpret_cast<void*>(uintptr_t(i + 1))) != 0) return 3;
  pid_t children[kMaxForks];
  for (int i = 0; i < forks; ++i) {
    const timespec pause{0, 5'000'000};  // the workers run between forks
    nanosleep(&pause, nullptr);
    const pid_t pid = fork();
    if (pid < 0) return 3;
    if (pid == 0) {
      child_alloc();
      exit(0);
    }
    children[i] = pid;
    for (int waited_ms = 0;; waited_ms += 10) {
      int status = 0;
      const pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
        break;
      }
      if (waited_ms >= 10'000) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return 4;
      }
      const timespec tick{0, 10'000'000};
      nanosleep(&tick, nullptr);
    }
  }
  g_stop = true;
  for (pthread_t& t : workers) pthread_join(t, nullptr);
  printf("%d forks while %d threads allocated\n", forks, kWorkers);
  static Truth truth;
  truth.add("parent_pid", getpid());
  truth.add("child_bytes", kChildBytes);
  truth.add("worker_allocations", g_worker_allocations.load());
  char pids[kMaxForks * 12 + 2];
  size_t used = 0;
  pids[used++] = '[';
  for (int i = 0; i < forks; ++i)
    used += snprintf(pids + used, sizeof(pids) - used, "%s%d", i ? "," : "", children[i]);
  snprintf(pids + used, sizeof(pids) - used, "]");
  truth.add_raw("child_pids", pids);
  truth.write_to(argv[1]);
  return 0;
}
