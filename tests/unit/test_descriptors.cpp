// The tracer's own descriptors (profiler/preload/descriptors.h) when the program closes
// them behind its back and the numbers come round again.
#include "profiler/preload/descriptors.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace preload = memstage::preload;

TEST_CASE("a descriptor number closed behind the tracer and handed to it again is its new file, not lost") {
  const int first = preload::adopt_descriptor(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(first >= 0);
  CHECK_FALSE(preload::descriptor_lost(first));
  ::close(first);  // the program's closefrom
  // The tracer opens a file of its own again: the lowest free high number is the same one.
  const int second = preload::adopt_descriptor(::open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
  REQUIRE(second == first);
  CHECK_FALSE(preload::descriptor_lost(second));
  CHECK(preload::release_descriptor(second));
  CHECK(::fcntl(second, F_GETFD) == -1);  // closed: it was the tracer's
}

TEST_CASE("a tracer descriptor the program took over is lost, and the tracer leaves it open") {
  const int fd = preload::adopt_descriptor(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(fd >= 0);
  ::close(fd);
  const int programs = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  REQUIRE(::dup2(programs, fd) == fd);  // the program's file under the tracer's number
  ::close(programs);
  CHECK(preload::descriptor_lost(fd));
  CHECK(preload::release_descriptor(fd));
  CHECK(::fcntl(fd, F_GETFD) != -1);  // still open: the program's
  ::close(fd);
}
