// The cgroup memory limit `memstage run` and its program run under, and the OOM killer's
// kills in it: a program the kernel killed for its cgroup's limit is named so in the report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::harness {

class OomWatch {
 public:
  // Reads this process's memory cgroup (its children start in it) and the OOM counts of it
  // and of the cgroups above it. Finds nothing where no memory controller is mounted.
  static OomWatch start();
  // The OOM kills since start(): the cgroup whose limit was hit, its limit, how many.
  std::optional<reports::OomKill> finish() const;
  // The lowest memory limit of the process's cgroup and those above it, where one is set:
  // what its program may hold before the OOM killer ends it (run --ram-limit auto).
  std::optional<uint64_t> memory_limit_bytes() const;

 private:
  struct Level {
    std::string dir;   // under the controller's mount
    std::string name;  // as /proc/self/cgroup names it
    uint64_t kills = 0;
    uint64_t ooms = 0;  // v2: times its own limit was hit (memory.events.local)
  };
  int version_ = 0;             // 0: none found
  std::vector<Level> levels_;   // from the process's cgroup up to the mount's root
};

}  // namespace memstage::harness
