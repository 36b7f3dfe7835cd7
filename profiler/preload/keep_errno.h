// One guard for errno, which the tracer keeps as the program left it: the tracer's work
// inside a program's call (recording, a futex, a system call) may set it.
#pragma once

#include <errno.h>

namespace memstage::preload {

// Saves errno where declared and puts it back where it goes out of scope (a return value
// is computed before). Declared after a RecordingGuard, errno is back before the guard
// raises a signal deferred inside the tracer.
class KeepErrno {
 public:
  KeepErrno() : saved_(errno) {}
  ~KeepErrno() { errno = saved_; }
  KeepErrno(const KeepErrno&) = delete;
  KeepErrno& operator=(const KeepErrno&) = delete;

 private:
  int saved_;
};

}  // namespace memstage::preload
