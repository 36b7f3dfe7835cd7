// The tracer's own descriptors (profiler/preload/descriptors.h) when the program closes
// them behind its back and takes the numbers, or the tracer is handed a number one of its
// own files had: each user asks by the identity it adopted, never by the number alone.
#include "profiler/preload/descriptors.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace preload = memstage::preload;

namespace {
bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }
}  // namespace

TEST_CASE("a tracer descriptor the program took over is lost, and the tracer leaves it open") {
  preload::OwnedDescriptor d = preload::adopt_descriptor(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(d.fd >= 0);
  CHECK(preload::still_owned(d));
  const int number = d.fd;
  ::close(number);
  CHECK_FALSE(preload::still_owned(d));  // closed: no file under the number
  const int programs = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  REQUIRE(::dup2(programs, number) == number);  // the program's file under the tracer's number
  ::close(programs);
  CHECK_FALSE(preload::still_owned(d));
  preload::release_descriptor(d);
  CHECK(d.fd == -1);
  CHECK(is_open(number));  // still open: the program's
  ::close(number);
}

TEST_CASE("two tracer files on one number: each owner knows whether it is still its own") {
  // The trace file is closed behind the tracer's back; the tracer's next file (libunwind's
  // new pipe end, say) is moved to the lowest free high number: the trace's old one.
  preload::OwnedDescriptor trace = preload::adopt_descriptor(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  REQUIRE(trace.fd >= 0);
  ::close(trace.fd);
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  preload::adopt_unwind_pipe(fds);
  REQUIRE(fds[0] >= 0);
  REQUIRE(fds[1] >= 0);
  CHECK(fds[0] == trace.fd);  // the number came round again
  CHECK(preload::unwind_pipe_end(fds[0]) == preload::PipeEnd::kOwned);
  CHECK(preload::unwind_pipe_end(fds[1]) == preload::PipeEnd::kOwned);
  // The trace's owner does not take the pipe end for its file, and letting its own go
  // leaves the pipe alone.
  CHECK_FALSE(preload::still_owned(trace));
  preload::release_descriptor(trace);
  CHECK(is_open(fds[0]));
  CHECK(preload::unwind_pipe_end(fds[0]) == preload::PipeEnd::kOwned);
  // And a file the tracer reopens gets a number of its own.
  preload::OwnedDescriptor reopened = preload::adopt_descriptor(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  REQUIRE(reopened.fd >= 0);
  CHECK(reopened.fd != fds[0]);
  CHECK(reopened.fd != fds[1]);
  CHECK(preload::still_owned(reopened));
  preload::release_descriptor(reopened);
  CHECK(preload::release_unwind_pipe_end(fds[0]));
  CHECK(preload::release_unwind_pipe_end(fds[1]));
  CHECK_FALSE(is_open(fds[0]));
  CHECK_FALSE(is_open(fds[1]));
}

TEST_CASE("libunwind's pipe: an end the program closed is lost with its partner, and never closed by the tracer") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  preload::adopt_unwind_pipe(fds);
  REQUIRE(fds[0] >= 0);
  CHECK(preload::unwind_pipe_end(12345) == preload::PipeEnd::kNotOne);
  CHECK_FALSE(preload::release_unwind_pipe_end(12345));
  // closefrom: both ends go; the program's file takes the write end's number.
  ::close(fds[0]);
  ::close(fds[1]);
  const int programs = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  REQUIRE(::dup2(programs, fds[1]) == fds[1]);
  ::close(programs);
  CHECK(preload::unwind_pipe_end(fds[1]) == preload::PipeEnd::kLost);
  CHECK(preload::unwind_pipe_end(fds[0]) == preload::PipeEnd::kLost);  // its partner is gone
  // libunwind closes both numbers: the program's file stays open.
  CHECK(preload::release_unwind_pipe_end(fds[0]));
  CHECK(preload::release_unwind_pipe_end(fds[1]));
  CHECK(is_open(fds[1]));
  CHECK(preload::unwind_pipe_end(fds[1]) == preload::PipeEnd::kNotOne);  // forgotten
  ::close(fds[1]);
}
