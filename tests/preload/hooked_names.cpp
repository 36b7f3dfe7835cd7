// Prints hooked_functions.h's list, one function a line: its symbol, whether the tracer
// forwards to it through a real-function pointer, and whether attaching hooks it.
#include <cstdio>

#include "profiler/preload/hooked_functions.h"

using memstage::preload::AttachHook;

namespace {
const char* attach_word(AttachHook attach) {
  switch (attach) {
    case AttachHook::kNo: return "preload-only";
    case AttachHook::kYes: return "attached";
    case AttachHook::kKept: return "attached-kept";
  }
  return "?";
}
}  // namespace

int main() {
#define MEMSTAGE_PRINT_FORWARDED(field, symbol, attach, result, parameters) \
  std::printf("%s forwarded %s\n", symbol, attach_word(attach));
#define MEMSTAGE_PRINT_OWN(symbol, attach) std::printf("%s own %s\n", symbol, attach_word(attach));
  MEMSTAGE_HOOKED_FUNCTIONS(MEMSTAGE_PRINT_FORWARDED, MEMSTAGE_PRINT_OWN)
  return 0;
}
