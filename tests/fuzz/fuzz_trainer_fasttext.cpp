// libFuzzer target: the reference trainer's fastText reader (`__label__X the text`).
#include "tests/fuzz/fuzz_trainer_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_all_examples(data, size, trainer::Format::fasttext);
  return 0;
}
