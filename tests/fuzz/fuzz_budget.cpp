// libFuzzer target: the budget file parser of `memstage gate` (docs/budget.md). Bad input
// must end in GateError (a one-line message), nothing else.
#include <cstdint>
#include <string>

#include "harness/gate/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    memstage::gate::parse_budget(text, "fuzz.json");
  } catch (const memstage::gate::GateError&) {
  }
  return 0;
}
