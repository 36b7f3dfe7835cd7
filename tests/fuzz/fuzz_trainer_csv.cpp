// libFuzzer target: the reference trainer's CSV reader (RFC 4180 quoting, multi-line fields).
#include "tests/fuzz/fuzz_trainer_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_all_examples(data, size, trainer::Format::csv);
  return 0;
}
