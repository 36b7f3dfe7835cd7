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
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <absl/container/flat_hash_map.h>

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

// Frames by address of one module, as Symbolizer::symbolize gives them less the module and
// the addresses (the caller's fills them in): each function and file name held once, as a
// function's addresses share its name, and a large library's cache holds many of them.
class ModuleFrames {
 public:
  struct Kept {
    uint32_t function = 0;  // text_of
    uint32_t file = 0;      // text_of
    int32_t line = 0;
    bool inlined = false;
  };
  // The frames kept for `key`, innermost first; empty where none are.
  std::span<const Kept> find(const SymbolCacheKey& key) const;
  // Keeps `frames` for `key` (a key kept already keeps its frames).
  void add(const SymbolCacheKey& key, const std::vector<Frame>& frames);
  // `kept` as a Frame: names, line and inlined; the rest left to the caller.
  Frame frame(const Kept& kept) const;
  const std::string& text_of(uint32_t id) const { return *texts_[id]; }
  size_t size() const { return by_key_.size(); }  // addresses kept
  bool empty() const { return by_key_.empty(); }
  // visit(key, frames) for every address kept.
  template <typename Visit>
  void for_each(Visit visit) const {
    for (const auto& [key, place] : by_key_) visit(key, std::span<const Kept>(frames_).subspan(place.first, place.second));
  }

 private:
  uint32_t text_id(const std::string& text);
  // Open addressing: a large library's cache holds ~1e5 addresses, each a node of their own
  // in a chained table (twice the bytes, and a cache miss more a look-up).
  absl::flat_hash_map<SymbolCacheKey, std::pair<uint32_t, uint32_t>, SymbolCacheKeyHash> by_key_;  // (first, count) in frames_
  std::vector<Kept> frames_;
  std::unordered_map<std::string, uint32_t> text_ids_;
  std::vector<const std::string*> texts_;  // by id: text_ids_'s keys
};

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
