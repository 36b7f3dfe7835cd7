// The tracer's own descriptors (profiler/preload/descriptors.h) when the program closes
// them behind its back and takes the numbers.
#include "profiler/preload/descriptors.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace preload = memstage::preload;

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
