// memstage run [-o DIR] [--mode full|stats|aggregate|sample] [--sample-rate BYTES] [--max-depth N]
//              [--serve ADDR [--serve-token FILE]] -- CMD ARGS...
// Runs CMD with the tracer preloaded, writes the traces, run.json, report.json and
// report.html into DIR, prints a summary on stderr and exits with CMD's exit code.
// With --serve, the run so far is answered over HTTP while CMD runs (harness/serve).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "harness/cli/child_process.h"
#include "harness/cli/memory_cgroup.h"
#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/cli/live_view.h"
#include "harness/cli/number_range.h"
#include "harness/cli/preload_path.h"
#include "harness/cli/report_files.h"
#include "harness/cli/sample_rate.h"
#include "harness/cli/serve_flags.h"
#include "harness/gate/gate.h"
#include "profiler/preload/options.h"
#include "profiler/trace/pending_chunks.h"
#include "harness/cli/sizes.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::harness {

namespace fs = std::filesystem;

namespace {

struct RunFlags {
  std::string output_dir;
  std::string mode = "full";
  std::string sample_rate;  // --sample-rate: sample mode's mean bytes between samples
  unsigned max_depth = 64;
  unsigned sample_interval_ms = 10;
  double snapshot_interval_s = 1.0;
  bool no_follow_fork = false;
  bool quiet = false;
  bool read_after_exit = false;  // --read-after-exit: no TraceBeingWritten
  bool live = false;             // --live: the live view while CMD runs (live_view.h)
  ServeFlags serve;              // --serve: the run so far over HTTP (harness/serve)
  std::string ram_limit;
  std::string ram_limit_action = "stop";
  std::vector<std::string> command;
  std::string budget_path;  // --budget: gate the report afterwards (harness/gate)
  std::string suppressions_path;  // --suppressions: leaks held apart (report_files.h)
  std::optional<size_t> top_stacks;  // --top-stacks
  std::string python_allocator = "pymalloc";
  bool no_python_frames = false;
  // --env NAME=VALUE: set for the command only, not for memstage (whose own jemalloc would
  // read a MALLOC_CONF meant for the program's allocator).
  std::vector<std::string> environment;
};

// What a Python program run under the tracer gets: the bootstrap (a sitecustomize.py
// that attaches the tracer's Python frames, and the memstage stage module) first on
// PYTHONPATH, and PYTHONMALLOC=malloc when asked for. Harmless to anything else.
void add_python_environment(const RunFlags& flags, const std::string& preload,
                            std::vector<std::pair<std::string, std::string>>& env) {
  if (!flags.no_python_frames) {
    const std::string bootstrap = find_python_bootstrap(preload);
    const char* existing = getenv("PYTHONPATH");
    env.emplace_back("PYTHONPATH", existing && *existing ? bootstrap + ":" + existing : bootstrap);
    env.emplace_back("MEMSTAGE_PYTHON_BOOTSTRAP", "1");  // its own work is not the program's (python_frames.h)
  }
  if (flags.python_allocator == "malloc") env.emplace_back("PYTHONMALLOC", "malloc");
}

std::string default_output_dir(const std::string& program) {
  return "memstage." + fs::path(program).filename().string() + "." + std::to_string(getpid());
}

// The flags' values, checked before anything runs (a typo fails at once, exit 2).
struct CheckedFlags {
  uint64_t sample_rate_bytes = 0;
  uint64_t ram_limit_bytes = 0;
  ReportChoices choices;
  std::optional<ServeOptions> serve;
};

CheckedFlags check_flags(const RunFlags& flags) {
  if (flags.command.empty()) throw CliError("run: no command given (memstage run [options] -- CMD ARGS...)");
  if (flags.mode != "full" && flags.mode != "stats" && flags.mode != "aggregate" && flags.mode != "sample") {
    throw CliError("run: --mode must be full, stats, aggregate or sample, not '" + flags.mode + "'");
  }
  CheckedFlags checked;
  checked.sample_rate_bytes = harness::sample_rate_bytes("run", flags.mode, flags.sample_rate);
  if (flags.ram_limit == "auto") {
    const auto limit = OomWatch::start().memory_limit_bytes();
    if (!limit) {
      throw CliError("run: --ram-limit auto: no memory limit is set on this process's cgroup (memory.max, "
                     "memory.limit_in_bytes): give a size");
    }
    checked.ram_limit_bytes = *limit;
  } else if (!flags.ram_limit.empty()) {
    const auto bytes = parse_size(flags.ram_limit);
    if (!bytes || *bytes == 0) throw CliError("run: --ram-limit takes a size like 16GiB, not '" + flags.ram_limit + "'");
    checked.ram_limit_bytes = *bytes;
  }
  if (flags.ram_limit_action != "stop" && flags.ram_limit_action != "record") {
    throw CliError("run: --ram-limit-action must be stop or record, not '" + flags.ram_limit_action + "'");
  }
  if (flags.python_allocator != "pymalloc" && flags.python_allocator != "malloc") {
    throw CliError("run: --python-allocator must be pymalloc or malloc, not '" + flags.python_allocator + "'");
  }
  if (flags.live && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) throw CliError("run: --live needs a terminal");
  if (!flags.budget_path.empty()) gate::load_budget(flags.budget_path);  // --budget: a typo fails before the run
  if (!flags.suppressions_path.empty()) checked.choices.leak_suppressions = read_leak_suppressions(flags.suppressions_path);
  checked.choices.top_stacks = flags.top_stacks;
  for (const std::string& setting : flags.environment) {
    if (setting.find('=') == std::string::npos || setting.starts_with("=")) {
      throw CliError("run: --env takes NAME=VALUE, not '" + setting + "'");
    }
  }
  checked.serve = check_serve_flags(flags.serve, "run");
  return checked;
}

// What the traced command gets: the preload library and the tracer's options.
std::vector<std::pair<std::string, std::string>> tracer_environment(const RunFlags& flags, const CheckedFlags& checked,
                                                                    const std::string& preload, const std::string& dir) {
  std::string ld_preload = preload;
  if (const char* existing = getenv("LD_PRELOAD"); existing && *existing) ld_preload += std::string(":") + existing;
  std::vector<std::pair<std::string, std::string>> env = {
      {"LD_PRELOAD", ld_preload},
      {"MEMSTAGE_OUTPUT", dir},
      {"MEMSTAGE_MODE", flags.mode},
      {"MEMSTAGE_SAMPLE_RATE_BYTES", std::to_string(checked.sample_rate_bytes)},
      {"MEMSTAGE_MAX_DEPTH", std::to_string(flags.max_depth)},
      {"MEMSTAGE_SAMPLE_INTERVAL_MS", std::to_string(flags.sample_interval_ms)},
      {"MEMSTAGE_SNAPSHOT_INTERVAL_MS", std::to_string(static_cast<unsigned>(flags.snapshot_interval_s * 1000 + 0.5))},
      {"MEMSTAGE_FOLLOW_FORK", flags.no_follow_fork ? "0" : "1"},
      {"MEMSTAGE_RAM_LIMIT_BYTES", std::to_string(checked.ram_limit_bytes)},
      {"MEMSTAGE_RAM_LIMIT_ACTION", flags.ram_limit_action},
  };
  add_python_environment(flags, preload, env);
  for (const std::string& setting : flags.environment) {
    const size_t eq = setting.find('=');
    env.emplace_back(setting.substr(0, eq), setting.substr(eq + 1));
  }
  return env;
}

// --budget (harness/gate): CMD's own failure wins; otherwise the gate's 0 or 1.
int gate_run(const RunFlags& flags, const std::string& dir, int child_exit_code) {
  gate::GateOptions gate_options;
  gate_options.budget_path = flags.budget_path;
  gate_options.github = getenv("GITHUB_ACTIONS") != nullptr;  // annotations where Actions reads them
  gate_options.table_out = stderr;                             // beside the summary; stdout is CMD's
  const int gate_exit = gate::run_gate(dir + "/report.json", gate_options);
  return child_exit_code == 0 ? gate_exit : child_exit_code;
}

// --live's view, on a thread of its own beside the wait for CMD: what stops it (a terminal it
// cannot drive) is said, and CMD runs on.
void show_live_view(const std::string& dir, reports::TraceBeingWritten* read_ahead,
                    const std::atomic<bool>& child_running) {
  try {
    // The run's read-ahead where it has one (the traces are read once), else one of its own.
    std::unique_ptr<reports::TraceBeingWritten> own;
    if (!read_ahead) {
      reports::AnalysisOptions options;
      options.max_event_log_bytes = 0;  // nothing replays its events
      own = std::make_unique<reports::TraceBeingWritten>(dir, options);
    }
    run_live_view(dir, read_ahead ? *read_ahead : *own, [&] { return child_running.load(); }, false);
  } catch (const std::exception& e) {
    fprintf(stderr, "memstage: %s\n", e.what());
  }
}

int run(const RunFlags& flags) {
  const CheckedFlags checked = check_flags(flags);
  // --serve: bound before anything is made or run (a port in use stops the run here).
  std::unique_ptr<ReportServer> server = bind_server(checked.serve, "run");
  const std::string preload = find_preload_library();
  const std::string dir = fs::absolute(flags.output_dir.empty() ? default_output_dir(flags.command[0])
                                                                : flags.output_dir)
                              .lexically_normal()
                              .string();
  prepare_output_dir(dir);
  // The traces' first passes are read while their processes run: by the command's end,
  // most of the analysis is done (reports/analysis/analyzer.h, TraceBeingWritten).
  std::unique_ptr<reports::TraceBeingWritten> read_ahead;
  const OomWatch oom_watch = OomWatch::start();
  // --live: the view runs beside the wait for CMD, until q or CMD's end.
  std::atomic<bool> child_running{true};
  std::jthread live_view;
  const ChildResult child = run_child(flags.command, tracer_environment(flags, checked, preload, dir), [&](uint64_t) {
    if (!flags.read_after_exit) read_ahead = read_traces_ahead(dir, flags.mode != "stats");
    // --serve: from the same followers where the run has them (the traces are read once).
    start_serving(server.get(), dir, flags.quiet, read_ahead.get(), checked.ram_limit_bytes);
    if (flags.live) live_view = std::jthread([&] { show_live_view(dir, read_ahead.get(), child_running); });
  });
  child_running = false;
  if (live_view.joinable()) live_view.join();
  server.reset();  // live while CMD runs; the report files follow
  // What the processes had encoded and not written when they died (a SIGKILL, the OOM
  // killer) goes into their traces before the traces are read to their end.
  trace::drain_pending_in_dir(dir);
  if (read_ahead) read_ahead->writer_ended();

  // From here on the program has run: whatever cannot be written or analysed (a full
  // disk, a broken trace) is said, what can be is kept, and CMD's exit status is ours.
  // --budget: with nothing to gate, a CMD that succeeded gets 2, not a pass.
  const int failed_exit = !flags.budget_path.empty() && child.exit_code == 0 ? 2 : child.exit_code;
  reports::RunInfo info{flags.command, child.pid, child.exit_code, child.signal, child.duration_s, oom_watch.finish(),
                        std::nullopt, std::nullopt};
  // The kernel's high-water mark of its RSS, which a SIGKILL kept its tracer from writing.
  if (child.signal == SIGKILL) info.max_rss_bytes = child.max_rss_bytes;
  if (checked.ram_limit_bytes) info.ram_limit_bytes = checked.ram_limit_bytes;
  write_or_say(dir + "/run.json", run_info_json(info));
  if (reports::find_traces(dir).empty()) {
    fprintf(stderr,
            "memstage: %s wrote no trace: is it statically linked or setuid? (LD_PRELOAD does not reach it)\n",
            reports::terminal_text(flags.command[0]).c_str());
    return failed_exit;
  }
  if (!write_reports(dir, info, flags.quiet, read_ahead.get(), nullptr, checked.choices)) return failed_exit;
  return flags.budget_path.empty() ? child.exit_code : gate_run(flags, dir, child.exit_code);
}

}  // namespace

void register_run(CLI::App& app, CommandAction& action) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "Run a command under the tracer and report on it");
  cmd->add_option("-o,--output", flags->output_dir, "Folder for traces and reports (default memstage.PROG.PID)");
  cmd->add_option("--mode", flags->mode,
                  "full: every event with its stack; stats: counters only; aggregate: every event with its "
                  "stack, folded in the process into figures per stack and stage (a capture that does not grow "
                  "with the run's length); sample: allocations sampled by bytes (stacks, leaks and sites estimated; "
                  "heap peaks exact)")
      ->capture_default_str();
  cmd->add_option("--snapshot-interval", flags->snapshot_interval_s,
                  "Aggregate mode: seconds between snapshots of its figures (what a killed run is reported up to)")
      ->check(number_in(0.001, 3600.0))
      ->capture_default_str();
  add_sample_rate_option(*cmd, flags->sample_rate);
  cmd->add_option("--max-depth", flags->max_depth, "Frames kept per stack")
      ->check(number_in(1, 256))
      ->capture_default_str();
  cmd->add_option("--sample-interval", flags->sample_interval_ms, "RSS sampling interval in milliseconds")
      ->check(number_in(1, 10000))
      ->capture_default_str();
  cmd->add_flag("--no-follow-fork", flags->no_follow_fork, "Do not trace forked children");
  cmd->add_flag("-q,--quiet", flags->quiet, "Print no summary");
  cmd->add_flag("--live", flags->live,
                "Show the run on a terminal screen while CMD runs (q leaves it, CMD goes on; CMD's own output is drawn "
                "over: `memstage live DIR` from another terminal keeps it)");
  add_serve_options(*cmd, flags->serve);
  cmd->add_flag("--read-after-exit", flags->read_after_exit,
                "Read the traces only after the program ends (by default they are read on spare cores as "
                "they are written: a faster report, but the analysis's memory is in use beside the program's)");
  cmd->add_option("--budget", flags->budget_path, "Gate the report against this budget (docs/budget.md): exit 1 when over");
  cmd->add_option("--top-stacks", flags->top_stacks, "Stacks listed at each peak (the run's, each stage's; default 20)")
      ->check(number_in<size_t>(1, 1000));
  cmd->add_option("--suppressions", flags->suppressions_path,
                  "Leaks to hold apart with the runtime's: a file of 'leak:PATTERN' lines, as LSan's");
  cmd->add_option("--ram-limit", flags->ram_limit,
                   "Play a machine with this much RAM (16GiB; auto: the cgroup's memory limit): record when RSS "
                   "passes it, warn in the report past 90 %");
  cmd->add_option("--ram-limit-action", flags->ram_limit_action,
                  "stop: end the program there, as the OOM killer would; record: let it run on")
      ->capture_default_str();
  cmd->add_option("--python-allocator", flags->python_allocator,
                  "Python programs: pymalloc (as they run normally; small objects are seen by their arenas, "
                  "as mmap) or malloc (PYTHONMALLOC=malloc: every object in the heap figures)")
      ->capture_default_str();
  cmd->add_flag("--no-python-frames", flags->no_python_frames,
                "Python programs: native frames only (no bootstrap on PYTHONPATH)");
  cmd->add_option("--env", flags->environment, "NAME=VALUE (repeatable): set for the command only, not for memstage")
      ->allow_extra_args(false);
  // After "--" everything is the command's, its own flags included; main.cpp puts a "--"
  // before the command where the user left it out.
  cmd->add_option("command", flags->command, "The command to run, after --")->expected(-1);
  cmd->callback([flags, &action] { action = [flags] { return run(*flags); }; });
}

}  // namespace memstage::harness
