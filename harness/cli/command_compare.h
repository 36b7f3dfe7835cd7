// memstage compare's runs, for the commands that compare by it (replay runs the replayer as
// compare runs a program).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/compare/run_plan.h"

namespace memstage::harness {

// --tune and --suggest, which compare and replay take alike.
struct TuningFlags {
  std::vector<std::string> specs;  // ALLOCATOR:NAME=VALUE,… (allocator_tuning.h)
  bool suggest = false;
  std::string suggest_stage;  // "": rank by the whole run's peak RSS
};

struct CompareFlags {
  std::string allocators;  // comma-separated
  std::vector<std::string> variants;
  unsigned repeat = 3;
  std::string output_dir;
  unsigned max_depth = 64;
  std::vector<std::string> command;
  std::vector<std::string> notes;  // said with the comparison (CompareResult::notes)
  TuningFlags tuning;
};

void add_tuning_options(CLI::App* cmd, TuningFlags& flags);
// After parsing: whether --suggest was given, with its stage or without.
void read_tuning_options(const CLI::App* cmd, TuningFlags& flags);

// The allocators compared: --allocators, then each --tune, then with --suggest each named
// allocator's grid. Throws CliError (exit 2) with one line for an unknown allocator or a
// malformed tuning, so a command can check them before any work.
std::vector<compare::AllocatorChoice> allocator_choices(const CompareFlags& flags);

// Runs every subject (allocator x variant) under memstage run, writes DIR/compare.json and
// compare.html and the table; 0 when every run succeeded.
int run_compare(const CompareFlags& flags);

}  // namespace memstage::harness
