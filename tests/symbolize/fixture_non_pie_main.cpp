// A non-PIE executable (ET_EXEC: linked at fixed addresses, load bias 0). It prints its
// load bias, a return address inside one of its functions and that call's line, so a test
// can symbolize the address offline, after this process has gone, as reports do.
#include <link.h>

#include <cstdio>

namespace {

__attribute__((noipa)) void* return_address_of_call() { return __builtin_return_address(0); }

__attribute__((noinline)) void* function_in_non_pie(int* call_line) {
  *call_line = __LINE__; void* address = return_address_of_call();
  asm volatile("" : "+r"(address));  // no tail call: the return address stays in here
  return address;
}

}  // namespace

int main() {
  int call_line = 0;
  void* address = function_in_non_pie(&call_line);
  ElfW(Addr) load_bias = 1;
  // The first module dl_iterate_phdr reports is the main program.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        *static_cast<ElfW(Addr)*>(data) = info->dlpi_addr;
        return 1;
      },
      &load_bias);
  std::printf("%lx %lx %d\n", static_cast<unsigned long>(load_bias),
              reinterpret_cast<unsigned long>(address), call_line);
}
