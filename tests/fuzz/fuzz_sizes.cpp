// libFuzzer target: sizes as people write them ("16GiB", "1.5G"), parsed for --ram-limit
// and budgets. Any text gives a size or nothing; a size parsed back from its plain byte
// count is the same size.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "harness/cli/sizes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (const auto bytes = memstage::harness::parse_size(text)) {
    if (memstage::harness::parse_size(std::to_string(*bytes)) != bytes) abort();
  }
  return 0;
}
