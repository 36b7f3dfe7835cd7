// The signals that end the process, listed once: the tracer completes its trace on them
// (tracer.cpp, on_fatal_signal), and its own threads and sleeps leave some unblocked.
#pragma once

#include <signal.h>

namespace memstage::preload {

struct FatalSignal {
  int signo;
  // Raised by a fault in the thread that faulted: never blocked by the tracer's threads
  // (blocked, the kernel kills the process at once, the trace's end unwritten). SIGABRT
  // is raised in the aborting thread too, but may also be sent to the whole process
  // (kill -ABRT), which the tracer's threads leave to the program's (writer.cpp,
  // start_tracer_thread).
  bool raised_by_fault;
};

// Whose default action dumps core: the trace is completed, then the default action.
inline constexpr FatalSignal kFatalSignals[] = {{SIGSEGV, true}, {SIGBUS, true},  {SIGILL, true}, {SIGFPE, true},
                                                {SIGTRAP, true}, {SIGSYS, true}, {SIGABRT, false}};

// Whose default action ends the process without a fault (multiprocessing and joblib end
// their workers with SIGTERM): the trace is completed, then the default action.
inline constexpr int kEndingSignals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,   SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE,
                                         SIGXCPU, SIGXFSZ, SIGPROF, SIGVTALRM, SIGIO,   SIGPWR,  SIGSTKFLT};

}  // namespace memstage::preload
