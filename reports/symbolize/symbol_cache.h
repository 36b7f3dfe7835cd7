// The symbolizer's results kept on disk between runs, one file per module file: a program
// run again (CI runs the same binaries all day) is symbolized from it without libdw reading
// and inflating debug information again (the C library's libc6-dbg DWARF alone is a good
// part of a small program's report).
//
// A module's entry holds only while the files it was made from are as they were: the module
// (device, inode, size, mtime, ctime), the separate debug file libdw used for it, and the
// debug file its build id names under /usr/lib/debug (installed since, or removed). A file
// that does not read back whole is ignored; one that cannot be written is not written; the
// folder keeps the files used last (SymbolCache::prune).
//
// Where: $MEMSTAGE_SYMBOL_CACHE (a folder; "off" or empty: no cache), else
// $XDG_CACHE_HOME/memstage/symbols, else ~/.cache/memstage/symbols.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

struct SymbolCacheKey {
  uint64_t module_offset = 0;
  bool is_return_address = false;
  bool operator==(const SymbolCacheKey&) const = default;
};

struct SymbolCacheKeyHash {
  size_t operator()(const SymbolCacheKey& key) const {
    return std::hash<uint64_t>()(key.module_offset) ^ static_cast<size_t>(key.is_return_address);
  }
};

// Frames by address of one module, as Symbolizer::symbolize gives them (module and
// address left empty: they are the caller's).
using ModuleFrames = std::unordered_map<SymbolCacheKey, std::vector<Frame>, SymbolCacheKeyHash>;

class SymbolCache {
 public:
  // The folder from the environment; nullopt: no cache.
  static std::optional<std::string> directory_from_environment();

  explicit SymbolCache(std::string directory) : directory_(std::move(directory)) {}

  // The identity of `module_path` as it is now (empty: not a regular file, never cached).
  static std::string module_identity(const std::string& module_path);

  // The frames kept for a module whose identity is `identity`, or none.
  ModuleFrames load(const std::string& identity) const;
  // Keeps `frames` for the module; `debug_file`: the separate debug file libdw read for it
  // (empty: none). Best effort: a failure leaves no partial file.
  void save(const std::string& identity, const std::string& debug_file, const ModuleFrames& frames) const;
  // Keeps the folder to the files read or written last, at most kMaxFiles of them and
  // kMaxFolderBytes in all (a module rebuilt all day leaves a file per build).
  void prune() const;
  static constexpr size_t kMaxFiles = 1024;
  static constexpr uintmax_t kMaxFolderBytes = 256ull << 20;

 private:
  std::string path_for(const std::string& identity) const;
  std::string directory_;
};

}  // namespace memstage::reports
