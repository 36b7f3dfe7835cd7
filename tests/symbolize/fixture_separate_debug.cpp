// Built with -g -O2; the build then moves its DWARF into a separate .debug file that the
// library names in .gnu_debuglink, the way distributions ship debug packages.
#include "tests/symbolize/fixture.h"

namespace {

__attribute__((noipa)) void* return_address_of_call() { return __builtin_return_address(0); }

}  // namespace

extern "C" __attribute__((noinline)) void* memstage_fixture_separate_debug(int* call_line) {
  *call_line = __LINE__; void* address = return_address_of_call();
  asm volatile("" : "+r"(address));
  return address;
}
