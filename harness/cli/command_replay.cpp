// memstage replay RUN|TRACE --allocators A,B,... [-o DIR] [--repeat N]: a full-mode run's
// allocation sequence run again under each allocator (harness/replay), measured and written
// as memstage compare writes its comparison (compare.json and compare.html), without the
// program, its data or its machine.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "harness/cli/cli_error.h"
#include "harness/cli/command_compare.h"
#include "harness/cli/commands.h"
#include "harness/cli/number_range.h"
#include "harness/cli/report_files.h"
#include "harness/cli/replay_non_heap.h"
#include "harness/files/output_files.h"
#include "harness/replay/replay_ops.h"
#include "reports/analysis/analyzer.h"

namespace memstage::harness {

namespace fs = std::filesystem;

namespace {

struct ReplayFlags {
  std::string run;  // a run's folder or one trace
  std::string allocators = "glibc";
  unsigned repeat = 3;
  std::string output_dir;
  TuningFlags tuning;
  bool heap_only = false;  // --heap-only: the program's memory outside its heap not held
};

// The replayer, beside this binary (bin/), as installed and in the build tree.
std::string find_replayer() {
  std::error_code ec;
  const fs::path path = fs::read_symlink("/proc/self/exe", ec).parent_path() / "memstage-replayer";
  if (!fs::exists(path, ec)) throw CliError("replay: cannot find " + path.string());
  return path.string();
}

// The trace replayed: the one given, or in a run's folder the process memstage run started
// (run.json's pid), else its only trace.
std::string trace_of(const std::string& run) {
  std::error_code ec;
  if (!fs::is_directory(run, ec)) {
    if (!fs::exists(run, ec)) throw CliError("replay: " + run + ": no such file or folder");
    return run;
  }
  const std::vector<std::string> traces = reports::find_traces(run);
  if (traces.empty()) throw CliError("replay: " + run + " holds no trace (trace.*.mst)");
  if (traces.size() == 1) return traces.front();
  const auto info = read_run_info(run);
  for (const std::string& t : traces) {
    if (info && info->pid && fs::path(t).filename().string().starts_with(fmt::format("trace.{}.", *info->pid))) return t;
  }
  throw CliError(fmt::format("replay: {} holds {} traces: give the one to replay (one process's)", run, traces.size()));
}

// What a replay reproduces and what not, said with its figures.
std::vector<std::string> replay_notes(const std::string& trace, const replay::ConversionSummary& summary,
                                      const std::string& non_heap) {
  return {non_heap,
      fmt::format("replayed: {}'s {} allocations, {} frees and {} reallocs, each by the call that made it (malloc, "
                  "calloc, the memalign family, operator new) with its alignment, in their order on each of its {} "
                  "threads, one replay thread each; across threads, a block freed by another thread than its "
                  "allocator's waits for its allocation, and a stage edge for every thread ({} waits); each block "
                  "written whole once when allocated, except calloc's (the replay's heap figures are the program's)",
                  trace, summary.allocations, summary.frees, summary.reallocs, summary.threads,
                  summary.cross_thread_waits),
      "not replayed: its addresses (a free takes the block of its size, stack, stage and call allocated last); the "
      "timing of its threads (each runs its ops as fast as it can, waiting only where the order across threads "
      "says)"};
}

int replay(const ReplayFlags& flags) {
  CompareFlags compare;
  compare.allocators = flags.allocators;
  compare.tuning = flags.tuning;
  allocator_choices(compare);  // a malformed --tune is said before the trace is converted
  const std::string trace = trace_of(flags.run);
  const std::string replayer = find_replayer();
  const std::string out_dir =
      fs::absolute(flags.output_dir.empty() ? "memstage.replay." + std::to_string(getpid()) : flags.output_dir)
          .lexically_normal()
          .string();
  files::create_output_folder(out_dir);
  const std::string ops = out_dir + "/replay.ops";
  replay::ConversionSummary summary;
  try {
    summary = replay::write_replay_ops(trace, ops);
  } catch (const std::exception& e) {
    throw CliError(std::string("replay: ") + e.what());
  }
  for (const std::string& warning : summary.warnings) fprintf(stderr, "memstage: replay: %s\n", warning.c_str());
  fprintf(stderr, "memstage: replay: %s: %llu allocations, %llu frees, %llu reallocs on %u threads, %u slots\n",
          trace.c_str(), static_cast<unsigned long long>(summary.allocations),
          static_cast<unsigned long long>(summary.frees), static_cast<unsigned long long>(summary.reallocs),
          summary.threads, summary.slots);
  compare.command = {replayer, ops};
  NonHeapHold hold{std::nullopt, "not held: the program's memory outside malloc (--heap-only), so each peak RSS here "
                                 "is the heap's share of the program's"};
  if (!flags.heap_only) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    hold = non_heap_hold(flags.run, self, replayer, ops, out_dir + "/calibration");
  }
  if (hold.hold_bytes) compare.command.push_back(std::to_string(*hold.hold_bytes));
  compare.notes = replay_notes(trace, summary, hold.note);
  compare.repeat = flags.repeat;
  compare.output_dir = out_dir;
  return run_compare(compare);
}

}  // namespace

void register_replay(CLI::App& app, CommandAction& action) {
  auto flags = std::make_shared<ReplayFlags>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay a full-mode run's allocations under several allocators, side by side, without the program");
  cmd->add_option("run", flags->run, "The run's folder (memstage run --mode full -o DIR), or one trace of it")->required();
  cmd->add_option("--allocators", flags->allocators,
                  "Comma-separated: glibc, jemalloc, tcmalloc, mimalloc, or paths to allocator .so files")
      ->capture_default_str();
  cmd->add_option("--repeat", flags->repeat, "Stats-mode replays per allocator, for time")
      ->check(number_in(1, 1000))
      ->capture_default_str();
  add_tuning_options(cmd, flags->tuning);
  cmd->add_flag("--heap-only", flags->heap_only,
                "Replay the heap alone: without the program's memory outside it (the program's peak RSS less the "
                "replayer's, docs/compare.md), each peak RSS is the heap's share");
  cmd->add_option("-o,--output", flags->output_dir, "Folder for the replays and compare.json/html (default memstage.replay.PID)");
  cmd->callback([cmd, flags, &action] {
    read_tuning_options(cmd, flags->tuning);
    action = [flags] { return replay(*flags); };
  });
}

}  // namespace memstage::harness
