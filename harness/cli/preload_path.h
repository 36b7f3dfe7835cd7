// Where libmemstage_preload.so is: next to this binary, in the build tree or installed.
#pragma once

#include <string>

namespace memstage::harness {

// MEMSTAGE_PRELOAD if set, else <bin>/../<libdir>/memstage/libmemstage_preload.so.
// Throws CliError when it is not there.
std::string find_preload_library();

}  // namespace memstage::harness
