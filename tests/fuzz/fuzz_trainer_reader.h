// The body of the trainer's reader fuzz targets: reads every example of the input as a
// file of the given format, skipping bad rows; a malformed file must end in trainer::Error.
#pragma once

#include <cstdint>
#include <string_view>

#include "trainer/error.h"
#include "trainer/examples.h"

inline void read_all_examples(const uint8_t* data, size_t size, trainer::Format format) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool skip_bad_rows : {true, false}) {
    try {
      trainer::ExampleReader reader("fuzz", text, format, skip_bad_rows);
      trainer::Example example;
      while (reader.next(example)) {
      }
      reader.rewind();
      while (reader.next(example)) {
      }
    } catch (const trainer::Error&) {
    }
  }
}
