// e2e.signal_mask: signals sent to the process reach the program's threads as they would
// untraced, never a thread of the tracer's. The kernel hands a process-directed signal to
// any thread that does not block it; a tracer thread that blocked nothing would take a
// signal every program thread blocks (here: read by signalfd) and die of its default action.
// A second thread runs first, so the tracer's threads exist (they start with the second
// thread, from this one, before it blocks anything). Then this thread blocks SIGUSR1 and
// SIGTERM, sends both to the process, reads them from a signalfd, and prints them; a block
// allocated between the two is left for the report. The truth file lists the names of the
// process's threads then (/proc/self/task/*/comm), which the tracer's threads show as theirs.
// Usage: signal_mask TRUTH_FILE
#include <dirent.h>
#include <signal.h>
#include <sys/signalfd.h>

#include <thread>

#include "e2e_common.h"

constexpr size_t kLeakBytes = 123471;

E2E_FRAME void leak_between_signals() { escape(malloc(kLeakBytes)); }

int read_signal(int fd) {
  signalfd_siginfo info{};
  if (read(fd, &info, sizeof(info)) != static_cast<ssize_t>(sizeof(info))) _exit(4);
  return static_cast<int>(info.ssi_signo);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::thread second([] { escape(malloc(64)); });
  second.join();

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return 3;
  const int fd = signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) return 3;

  kill(getpid(), SIGUSR1);
  const int first = read_signal(fd);
  leak_between_signals();
  kill(getpid(), SIGTERM);
  const int second_signal = read_signal(fd);
  printf("signals read: %d %d\n", first, second_signal);

  // The threads' names, as one JSON list (no allocation: the names are short).
  char names[1024] = "[";
  size_t used = 1;
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (const dirent* task = readdir(tasks)) {
      if (task->d_name[0] == '.') continue;
      char path[300], name[32] = {};
      snprintf(path, sizeof(path), "/proc/self/task/%s/comm", task->d_name);
      const int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      const ssize_t n = read(fd, name, sizeof(name) - 1);
      close(fd);
      if (n > 0 && name[n - 1] == '\n') name[n - 1] = '\0';
      used += snprintf(names + used, sizeof(names) - used, "%s\"%s\"", used > 1 ? ", " : "", name);
    }
    closedir(tasks);
  }
  snprintf(names + used, sizeof(names) - used, "]");

  Truth truth;
  truth.add("leak_bytes", kLeakBytes);
  truth.add_raw("thread_names", names);
  truth.write_to(argv[1]);
  return 0;
}
