// Offline symbolization: turns the return addresses the tracer recorded into functions,
// source files and lines, with inlined frames, using libdw on the module files as they
// are on disk now (separate debug files found the standard way, e.g. /usr/lib/debug), and
// keeps the results on disk for the next run of the same files (symbol_cache.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

class SymbolCache;

class Symbolizer {
 public:
  // With the on-disk cache the environment names (symbol_cache.h), if any.
  Symbolizer();
  // With the cache in `cache_directory`; nullopt: none.
  explicit Symbolizer(const std::optional<std::string>& cache_directory);
  // Keeps what was symbolized anew in the cache.
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;
  Symbolizer(Symbolizer&&) noexcept;
  Symbolizer& operator=(Symbolizer&&) noexcept;

  // Opens `module_path` and reads its symbol table and debug information now, so that
  // symbolizing in it later costs only lookups. A run's trace reader warms the C library
  // while the program runs: where its debug information is installed (libc6-dbg), reading
  // it is most of a small run's report time. Never throws.
  void warm(const std::string& module_path);
  // Warms the C library's modules (libc, the dynamic loader) as this process loaded them:
  // every traced process's stacks end in them (its threads start there), and a program
  // that memstage runs loads them the same way, from the same paths.
  void warm_c_library();

  // Frames for one address of the traced process, innermost first: the inlined frames
  // (inlined = true), then the function that contains them. Always at least one frame;
  // where nothing is known it has only module, address and module_offset.
  //   module_path: the ELF file as it was loaded (executable or shared object).
  //   load_bias: dl_iterate_phdr's dlpi_addr (address in process = load_bias + ELF vaddr).
  //   is_return_address: look up address - 1 (inside the call instruction) for line and
  //     inline information; the frames still report `address` unchanged.
  // Never throws and never prints; a missing or non-ELF module yields the bare frame.
  std::vector<Frame> symbolize(const std::string& module_path, uint64_t load_bias,
                               uint64_t address, bool is_return_address);

  // Modules whose file libdw opened so far (those the cache answered for are not).
  size_t modules_opened() const;

 private:
  class Module;  // one ELF file and its debug information; keeps libdw out of this header
  Module& module(const std::string& module_path);

  std::shared_ptr<const SymbolCache> cache_;  // null: none
  std::unordered_map<std::string, std::unique_ptr<Module>> modules_;
};

}  // namespace memstage::reports
