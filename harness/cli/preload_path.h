// Where libmemstage_preload.so and memstage's other libraries are: next to this binary, in
// the build tree or installed.
#pragma once

#include <string>

namespace memstage::harness {

// One of memstage's libraries (the preload library, the --serve module) by its file name:
// <bin>/../<libdir>/memstage/FILE_NAME. Throws CliError when it is not there.
std::string find_memstage_library(const std::string& file_name);

// MEMSTAGE_PRELOAD if set, else <bin>/../<libdir>/memstage/libmemstage_preload.so.
// Throws CliError when it is not there.
std::string find_preload_library();

// The folder of the Python bootstrap (sitecustomize.py, memstage.py) installed beside
// the preload library: <dir of preload>/python. Throws CliError when it is not there.
std::string find_python_bootstrap(const std::string& preload_library);

}  // namespace memstage::harness
