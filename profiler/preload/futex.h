// The futex calls the tracer's threads and the program's threads inside the tracer make
// on one another: a wait while a 32-bit word still holds a value, and a wake. Both keep
// errno as it was: they run on the program's threads too, whose errno is the program's.
#pragma once

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "profiler/preload/keep_errno.h"

namespace memstage::preload {

// Sleeps while the 32-bit word at `word` holds `value`, at most `timeout_ns`, until a wake.
inline void futex_wait(const void* word, uint32_t value, uint64_t timeout_ns) {
  timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  KeepErrno keep;  // EAGAIN, ETIMEDOUT, EINTR
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, &timeout, nullptr, 0);
}

// Wakes up to `waiters` threads asleep on `word`.
inline void futex_wake(const void* word, int waiters) {
  KeepErrno keep;
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, waiters, nullptr, nullptr, 0);
}

}  // namespace memstage::preload
