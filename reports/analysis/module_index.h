// Which loaded module an address of the traced process belongs to. A trace records the
// module list again at every dlopen/dlclose; the same file loaded at the same place in
// several lists is one loaded module here, and addresses are looked up by sorted segments.
#pragma once

#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "profiler/trace/trace_reader.h"

namespace memstage::reports {

class ModuleIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // `snapshots`: the trace's module lists in order; kept by reference.
  explicit ModuleIndex(const std::vector<std::vector<trace::Module>>& snapshots);

  // The module list current when a stack was defined (`snapshot`), else a later one: the
  // writer puts a stack's definition before the events of its batch, so a library
  // dlopen'ed in the same batch is only in the list that follows. In that list, the first
  // module that covers the address. kNone when no list has one.
  uint32_t module_for(uint64_t address, int snapshot);
  const trace::Module& module(uint32_t id) const { return *loaded_[id].module; }
  // The module lists it was made of.
  size_t lists() const { return snapshot_modules_.size(); }
  // Lets go of the candidates found per address (module_for finds them again if asked).
  void forget_addresses() {
    std::vector<uint32_t>().swap(candidates_);
    decltype(candidates_by_address_)().swap(candidates_by_address_);
  }

 private:
  static constexpr int kNever = INT_MAX;

  // One file loaded at one place, however many module lists name it.
  struct LoadedModule {
    const trace::Module* module = nullptr;     // its first listing
    std::vector<std::pair<int, int>> present;  // runs of snapshots that list it, ascending
  };
  struct LoadedSegment {
    uint64_t start, end;
    uint32_t module;
  };

  // The loaded modules whose segments cover the address in some snapshot: (first, count)
  // in candidates_, computed once per address.
  std::pair<uint32_t, uint32_t> candidates_of(uint64_t address);
  // The first snapshot from `snapshot` on that lists the loaded module.
  int listed_from(uint32_t module, int snapshot) const;

  std::vector<LoadedModule> loaded_;
  std::vector<std::vector<uint32_t>> snapshot_modules_;  // loaded module of each listing
  std::vector<LoadedSegment> segments_;                  // by start
  std::vector<uint64_t> segment_end_max_;                // largest end up to each segment
  std::vector<uint32_t> candidates_;
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint32_t>> candidates_by_address_;  // looked up per stack node
};

}  // namespace memstage::reports
