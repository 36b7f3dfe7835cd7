// e2e.sigkill: holds 50 blocks of 1 MiB + 7 bytes (more than 50 MiB) from hold_block(),
// sleeps 1 s (the tracer writes at least every 50 ms), then sends itself SIGKILL: no
// handler runs, the trace ends at the tracer's last write. With "threaded" after the
// truth file, a second thread first churns 500k blocks, so that the tracer's writer and
// compressor threads write what the sleep waits for. With "busy", one thread throughout
// and no wait at all: instead of the sleep, 16-byte blocks allocated (and freed a window
// later) 20,000 a second, for 0.5 s, then for 0.5 s more and at least 8,192 blocks more
// before the kill: a process with one thread has its trace written only at serve points on
// its own calls. The truth then also says how many blocks it had made 0.5 s before.
// With "term" in that word (e2e.sigterm_modes), SIGTERM instead of SIGKILL, whose default
// action the program sees as SIG_DFL (the truth's "saw_default"); with "handled" too, its
// own SIGTERM handler, installed with signal(), ends it with exit 42.
#include <signal.h>
#include <time.h>

#include "e2e_common.h"

constexpr size_t kBlockSize = 1048576 + 7;
constexpr int kBlocks = 50;

E2E_FRAME void hold_block(int i) {
  void* p = malloc(kBlockSize);
  escape(p);
  memset(p, i, kBlockSize);
}

double monotonic_s() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Small blocks at a steady 20,000 a second (spinning between them, never waiting) until
// `seconds` have passed and at least `at_least` were made; returns how many.
long allocate_small_blocks(double seconds, long at_least) {
  static void* window[64];
  const double start = monotonic_s();
  long made = 0;
  for (double next = start; made < at_least || monotonic_s() - start < seconds; next += 50e-6) {
    while (monotonic_s() < next) {
    }
    void* p = malloc(16);
    escape(p);
    free(window[made % 64]);
    window[made % 64] = p;
    ++made;
  }
  return made;
}

void exit_42(int) { _exit(42); }

bool sees_default_action(int signo) {
  struct sigaction current{};
  return sigaction(signo, nullptr, &current) == 0 && current.sa_handler == SIG_DFL;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  const char* word = argc > 2 ? argv[2] : "";
  const bool busy = strstr(word, "busy") != nullptr;
  const int end_signal = strstr(word, "term") ? SIGTERM : SIGKILL;
  static Truth truth;
  truth.add("saw_default", sees_default_action(SIGTERM) ? 1 : 0);
  if (strstr(word, "handled")) signal(SIGTERM, exit_42);
  if (argc > 2 && strcmp(argv[2], "threaded") == 0) churn_in_a_second_thread(500'000);
  for (int i = 0; i < kBlocks; ++i) hold_block(i);
  truth.add("blocks", kBlocks);
  truth.add_u("size", kBlockSize);
  if (busy) {
    truth.add("small_blocks_before", allocate_small_blocks(0.5, 0));
    truth.write_to(truth_file);
    allocate_small_blocks(0.5, 8192);
  } else {
    truth.write_to(truth_file);
    timespec one_second{1, 0};
    while (nanosleep(&one_second, &one_second) != 0) {
    }
  }
  raise(end_signal);
  return 0;
}
