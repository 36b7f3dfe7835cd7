// e2e.signal_mask: signals sent to the process reach the program's threads as they would
// untraced, never a thread of the tracer's. The kernel hands a process-directed signal to
// any thread that does not block it; a tracer thread that blocked nothing would take a
// signal every program thread blocks (here: read by signalfd) and die of its default action.
// A second thread runs first, so the tracer's threads exist (they start with the second
// thread, from this one, before it blocks anything). Then this thread blocks SIGUSR1 and
// SIGTERM, sends both to the process, reads them from a signalfd, and prints them; a block
// allocated between the two is left for the report.
// Usage: signal_mask TRUTH_FILE
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

  Truth truth;
  truth.add("leak_bytes", kLeakBytes);
  truth.write_to(argv[1]);
  return 0;
}
