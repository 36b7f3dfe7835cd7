// Where libmemstage_preload.so is: next to this binary, in the build tree or installed.
#pragma once

#include <string>

namespace memstage::harness {

// MEMSTAGE_PRELOAD if set, else <bin>/../<libdir>/memstage/libmemstage_preload.so.
// Throws CliError when it is not there.
std::string find_preload_library();

// The folder of the Python bootstrap (sitecustomize.py, memstage.py) installed beside
// the preload library: <dir of preload>/python. Throws CliError when it is not there.
std::string find_python_bootstrap(const std::string& preload_library);

}  // namespace memstage::harness
