#include "harness/cli/preload_path.h"

#include <cstdlib>
#include <filesystem>

#include "harness/cli/cli_error.h"

namespace memstage::harness {

namespace fs = std::filesystem;

std::string find_memstage_library(const std::string& file_name) {
  std::error_code ec;
  const fs::path bin = fs::read_symlink("/proc/self/exe", ec).parent_path();
  // The build tree mirrors the installed layout: bin/ beside lib/memstage/.
  for (const char* libdir : {MEMSTAGE_INSTALL_LIBDIR, "lib"}) {
    const fs::path candidate = bin / ".." / libdir / "memstage" / file_name;
    if (fs::exists(candidate, ec)) return fs::canonical(candidate).string();
  }
  throw CliError("cannot find " + file_name + " next to " + bin.string() +
                 (file_name == "libmemstage_preload.so" ? " (set MEMSTAGE_PRELOAD to its path)" : ""));
}

std::string find_preload_library() {
  if (const char* path = getenv("MEMSTAGE_PRELOAD"); path && *path) {
    if (!fs::exists(path)) throw CliError(std::string("MEMSTAGE_PRELOAD=") + path + " does not exist");
    return fs::absolute(path).string();
  }
  return find_memstage_library("libmemstage_preload.so");
}

std::string find_python_bootstrap(const std::string& preload_library) {
  const fs::path dir = fs::path(preload_library).parent_path() / "python";
  std::error_code ec;
  if (!fs::exists(dir / "sitecustomize.py", ec)) {
    throw CliError("cannot find the Python bootstrap " + (dir / "sitecustomize.py").string() +
                   " beside the preload library (or run with --no-python-frames)");
  }
  return dir.string();
}

}  // namespace memstage::harness
