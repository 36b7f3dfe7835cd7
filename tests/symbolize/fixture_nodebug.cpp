// Built with -g0 -O2: no DWARF, so only the ELF symbol table can name these functions.
#include "tests/symbolize/fixture.h"

namespace memstage_fixture_nodebug {
namespace {

__attribute__((noipa)) void* return_address_of_call() { return __builtin_return_address(0); }

}  // namespace

__attribute__((noinline)) void* function_without_debug_info() {
  void* address = return_address_of_call();
  asm volatile("" : "+r"(address));
  return address;
}

}  // namespace memstage_fixture_nodebug
