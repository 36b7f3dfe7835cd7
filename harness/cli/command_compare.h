// memstage compare's runs, for the commands that compare by it (replay runs the replayer as
// compare runs a program).
#pragma once

#include <string>
#include <vector>

namespace memstage::harness {

struct CompareFlags {
  std::string allocators;  // comma-separated
  std::vector<std::string> variants;
  unsigned repeat = 3;
  std::string output_dir;
  unsigned max_depth = 64;
  std::vector<std::string> command;
  std::vector<std::string> notes;  // said with the comparison (CompareResult::notes)
};

// Runs every subject (allocator x variant) under memstage run, writes DIR/compare.json and
// compare.html and the table; 0 when every run succeeded.
int run_compare(const CompareFlags& flags);

}  // namespace memstage::harness
