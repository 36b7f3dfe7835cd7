// Built with -g -O2. The asm statements after each call keep the call from becoming a
// tail jump, so the return address really lies in the function that made the call.
#include "tests/symbolize/fixture.h"

namespace memstage_fixture {
namespace {

// noipa: neither inlined nor cloned, so __builtin_return_address(0) is in the caller.
__attribute__((noipa)) void* return_address_of_call() { return __builtin_return_address(0); }

__attribute__((always_inline)) inline void* innermost_inline(int* innermost_line) {
  *innermost_line = __LINE__; void* address = return_address_of_call();
  asm volatile("" : "+r"(address));
  return address;
}

__attribute__((always_inline)) inline void* middle_inline(int* innermost_line,
                                                          int* middle_call_line) {
  *middle_call_line = __LINE__; void* address = innermost_inline(innermost_line);
  asm volatile("" : "+r"(address));
  return address;
}

class Widget {
 public:
  __attribute__((noinline)) void* method(int* call_line) {
    *call_line = __LINE__; void* address = return_address_of_call();
    asm volatile("" : "+r"(address), "+r"(state_));
    return address;
  }

 private:
  int state_ = 0;
};

}  // namespace

__attribute__((noinline)) void* plain_function(int* call_line) {
  *call_line = __LINE__; void* address = return_address_of_call();
  asm volatile("" : "+r"(address));
  return address;
}

__attribute__((noinline)) void* inlining_caller(int* innermost_line, int* middle_call_line,
                                                int* caller_call_line) {
  *caller_call_line = __LINE__; void* address = middle_inline(innermost_line, middle_call_line);
  asm volatile("" : "+r"(address));
  return address;
}

__attribute__((noinline)) void* member_of_class_in_anonymous_namespace(int* call_line) {
  Widget widget;
  void* address = widget.method(call_line);
  asm volatile("" : "+r"(address));
  return address;
}

__attribute__((noinline)) void* function_with_lambda(int* call_line) {
  auto lambda = [call_line]() __attribute__((noinline)) {
    *call_line = __LINE__; void* address = return_address_of_call();
    asm volatile("" : "+r"(address));
    return address;
  };
  void* address = lambda();
  asm volatile("" : "+r"(address));
  return address;
}

template <typename T>
__attribute__((noinline)) void* templated_function(T value, int* call_line) {
  *call_line = __LINE__; void* address = return_address_of_call();
  asm volatile("" : "+r"(address), "+r"(value));
  return address;
}
template void* templated_function<long>(long value, int* call_line);

}  // namespace memstage_fixture
