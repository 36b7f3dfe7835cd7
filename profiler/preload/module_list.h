// The process's loaded modules, for the trace's kModules record: at the start (writer.cpp)
// and after each dlopen and dlclose (tracer.cpp, record_modules_changed).
#pragma once

#include <cstdint>

namespace memstage::preload {

// Encodes the module list (dl_iterate_phdr) as a kModules record into `out` (capacity
// bytes); returns the length, 0 if it did not fit.
uint32_t encode_modules(uint8_t* out, uint32_t capacity);

}  // namespace memstage::preload
