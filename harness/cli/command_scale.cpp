// memstage scale --sizes 1000,2000,4000 --ram 16GiB [-o DIR] [--flat a,b] [--metric rss|heap]
//                [--mode full|stats] -- CMD ... {n} ...
// Runs CMD once per size with {n} replaced (each a `memstage run` into DIR/n<size>/),
// fits each stage's peak against n and says at which n the total passes the RAM limit.
// Writes DIR/scale.json and DIR/scale.html; the table goes to stdout.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "harness/cli/child_process.h"
#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/cli/report_files.h"
#include "harness/cli/option_lists.h"
#include "harness/cli/sizes.h"
#include "harness/files/output_files.h"
#include "harness/files/report_figures.h"
#include "harness/files/report_json.h"
#include "harness/scale/scale_report.h"
#include "reports/render/text/human_units.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::harness {

namespace fs = std::filesystem;
using reports::format_bytes;

namespace {

struct ScaleFlags {
  std::string sizes;
  std::string ram;
  std::string output_dir;
  std::string flat;
  std::string mode = "full";
  std::string metric = "rss";
  std::vector<std::string> command;
};

std::string substitute(const std::string& arg, const std::string& n) {
  std::string out;
  for (size_t i = 0; i < arg.size();) {
    if (arg.compare(i, 3, "{n}") == 0) {
      out += n;
      i += 3;
    } else {
      out += arg[i++];
    }
  }
  return out;
}

// The traced program's own output goes to DIR/n<size>/output.log: stdout is for the table.
// Our stdout/stderr are pointed there for the child's lifetime (single-threaded here).
ChildResult run_logged(const std::vector<std::string>& argv, const std::string& log_path) {
  fflush(stdout);
  fflush(stderr);
  unlink(log_path.c_str());  // an earlier run's log, or a link planted in its place
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (log < 0) throw CliError("cannot write " + log_path);
  const int saved_out = dup(1), saved_err = dup(2);
  dup2(log, 1);
  dup2(log, 2);
  close(log);
  auto restore = [&] {
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
  };
  try {
    ChildResult r = run_child(argv, {});
    restore();
    return r;
  } catch (...) {
    restore();
    throw;
  }
}

std::string last_lines(const std::string& path, size_t count) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) out += "  " + lines[i] + "\n";
  return out;
}

// Both descriptors on one terminal: what was said on one is on the screen already.
bool same_terminal(int a, int b) {
  struct stat sa, sb;
  return isatty(a) && isatty(b) && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_rdev == sb.st_rdev;
}

void check_flags(const ScaleFlags& flags) {
  if (flags.command.empty()) throw CliError("scale: no command given (memstage scale [options] -- CMD ... {n} ...)");
  if (std::none_of(flags.command.begin(), flags.command.end(),
                   [](const std::string& a) { return a.find("{n}") != std::string::npos; })) {
    throw CliError("scale: no argument of the command holds {n}, the place for the size");
  }
  if (flags.mode != "full" && flags.mode != "stats") throw CliError("scale: --mode must be full or stats");
  if (flags.metric != "rss" && flags.metric != "heap") throw CliError("scale: --metric must be rss or heap");
}

// --sizes: positive integers, sorted, each once.
std::vector<uint64_t> parse_sizes(const std::string& list) {
  std::vector<uint64_t> sizes;
  for (const auto& text : split_commas(list)) {
    size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(text, &used);
    } catch (...) {
      used = 0;
    }
    // stoull takes "-1" as 2^64 - 1: a sign is refused before it.
    if (used != text.size() || value == 0 || !isdigit(static_cast<unsigned char>(text[0]))) {
      throw CliError("scale: --sizes: '" + text + "' is not a positive integer");
    }
    sizes.push_back(value);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.empty()) throw CliError("scale: --sizes is empty");
  return sizes;
}

uint64_t parse_ram(const std::string& text) {
  const auto ram = parse_size(text);
  if (!ram || *ram == 0) throw CliError("scale: --ram: '" + text + "' is not a size (e.g. 16GiB)");
  return *ram;
}

scale::ScaleInput scale_input(const ScaleFlags& flags, uint64_t ram_bytes, const std::vector<uint64_t>& sizes) {
  scale::ScaleInput input;
  input.command = flags.command;
  input.ram_bytes = double(ram_bytes);
  input.metric = flags.metric == "heap" ? scale::Metric::kHeap : scale::Metric::kRss;
  input.mode = flags.mode;
  input.flat = split_commas(flags.flat);
  input.totals.name = "total";
  for (uint64_t n : sizes) input.sizes.push_back(double(n));
  return input;
}

// The run at one size, where it happens and what is known before it.
struct SizeRun {
  uint64_t size = 0;
  std::string self;     // this memstage binary: each size is a plain `memstage run` of it
  std::string run_dir;  // DIR/n<size>
  const ScaleFlags* flags = nullptr;
};

// Runs one size and reads its report; the figures when it ran to the end with a report.
std::optional<files::ReportFigures> run_size(const SizeRun& run, scale::RunRecord& record, ChildResult& child) {
  std::error_code ec;
  fs::remove(run.run_dir + "/report.json", ec);
  files::create_output_folder(run.run_dir);
  std::vector<std::string> argv = {run.self, "run", "-q", "-o", run.run_dir, "--mode", run.flags->mode, "--"};
  for (const auto& arg : run.flags->command) argv.push_back(substitute(arg, std::to_string(run.size)));
  fprintf(stderr, "memstage: scale n=%llu ...", (unsigned long long)run.size);
  child = run_logged(argv, run.run_dir + "/output.log");
  record.exit_code = child.exit_code;
  record.duration_s = child.duration_s;
  std::optional<files::ReportFigures> figures;
  try {
    figures = files::read_figures(files::read_report_json(run.run_dir), record.dir + "/report.json");
  } catch (const files::ReportFileError&) {
  }
  if (figures && child.exit_code == 0) return figures;
  record.status = "failed";
  record.reason = !figures ? "no report (see " + record.dir + "/output.log)" : "exit code " + std::to_string(child.exit_code);
  fprintf(stderr, " failed: %s\n%s", record.reason.c_str(), last_lines(run.run_dir + "/output.log", 5).c_str());
  return std::nullopt;
}

// The sweep so far: why the remaining sizes are not run ("" while they are), and whether a run failed.
struct Sweep {
  std::string stopped;
  bool any_failed = false;
};

// Skips what the fit so far says would not fit: peak RSS, whatever --metric says,
// because RSS is what the machine runs out of.
bool skip_predicted(const scale::ScaleInput& input, uint64_t size, scale::RunRecord& record) {
  if (input.totals.points.size() < 2) return false;
  record.predicted_peak_bytes = scale::predict(metric_points(input.totals, scale::Metric::kRss), record.n);
  if (!record.predicted_peak_bytes || *record.predicted_peak_bytes <= input.ram_bytes) return false;
  record.status = "skipped";
  record.reason = "predicted " + format_bytes(*record.predicted_peak_bytes) + " > RAM " + format_bytes(input.ram_bytes);
  fprintf(stderr, "memstage: scale n=%llu skipped: %s\n", (unsigned long long)size, record.reason.c_str());
  return true;
}

void sweep_size(SizeRun run, const std::string& dir, scale::ScaleInput& input, Sweep& sweep) {
  scale::RunRecord record;
  record.n = double(run.size);
  if (!sweep.stopped.empty()) {
    record.status = "not run";
    record.reason = sweep.stopped;
  } else if (!skip_predicted(input, run.size, record)) {
    record.dir = "n" + std::to_string(run.size);
    run.run_dir = dir + "/" + record.dir;
    ChildResult child;
    if (const auto figures = run_size(run, record, child)) {
      record.status = "ok";
      scale::add_points(input, record.n, *figures);
      record.peak_heap_bytes = input.totals.points.back().peak_heap_bytes;
      record.peak_rss_bytes = input.totals.points.back().peak_rss_bytes;
      fprintf(stderr, " peak heap %s, peak RSS %s, %.2f s\n", format_bytes(record.peak_heap_bytes).c_str(),
              format_bytes(record.peak_rss_bytes).c_str(), record.duration_s);
      if (record.peak_rss_bytes > input.ram_bytes) {
        sweep.stopped = "stopped: n=" + std::to_string(run.size) + " measured peak RSS " +
                        format_bytes(record.peak_rss_bytes) + " > RAM " + format_bytes(input.ram_bytes);
      }
    } else {
      sweep.any_failed = true;
      // A failure at one size may be about that input (a label missing from a small
      // sample); the next size is still worth running. A kill by signal is most likely
      // the OOM killer, and larger sizes would only die the same way.
      if (child.signal) {
        sweep.stopped = "stopped after n=" + std::to_string(run.size) + " was killed by signal " +
                        std::to_string(*child.signal);
      }
    }
  }
  input.runs.push_back(record);
}

int scale_command(const ScaleFlags& flags) {
  check_flags(flags);
  const uint64_t ram_bytes = parse_ram(flags.ram);
  const std::vector<uint64_t> sizes = parse_sizes(flags.sizes);
  scale::ScaleInput input = scale_input(flags, ram_bytes, sizes);
  const std::string dir =
      fs::absolute(flags.output_dir.empty()
                       ? "memstage-scale." + fs::path(flags.command[0]).filename().string() + "." + std::to_string(getpid())
                       : flags.output_dir)
          .lexically_normal()
          .string();
  files::create_output_folder(dir);
  std::error_code ec;
  SizeRun run;
  run.flags = &flags;
  run.self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw CliError("cannot find the memstage binary (/proc/self/exe)");
  Sweep sweep;
  for (uint64_t size : sizes) {
    run.size = size;
    sweep_size(run, dir, input, sweep);
  }
  const scale::ScaleAnalysis analysis = scale::analyze(input);
  files::write_output_file(dir + "/scale.json", scale::render_scale_json(analysis));
  files::write_output_file(dir + "/scale.html", scale::render_scale_html(analysis));
  const std::string text = scale::render_scale_text(analysis, !same_terminal(STDOUT_FILENO, STDERR_FILENO));
  fputs(reports::terminal_lines(text).c_str(), stdout);
  fflush(stdout);
  fprintf(stderr, "memstage: wrote %s/scale.json and scale.html\n", dir.c_str());
  return sweep.any_failed ? 1 : 0;
}

}  // namespace

void register_scale(CLI::App& app, CommandAction& action) {
  auto flags = std::make_shared<ScaleFlags>();
  CLI::App* cmd = app.add_subcommand("scale", "Run a command at several input sizes and fit how its memory grows");
  cmd->add_option("--sizes", flags->sizes, "Input sizes, comma-separated; {n} in the command is replaced by each")
      ->required();
  cmd->add_option("--ram", flags->ram, "The RAM limit to predict against (e.g. 16GiB)")->required();
  cmd->add_option("-o,--output", flags->output_dir, "Folder for the runs and scale.json/html");
  cmd->add_option("--flat", flags->flat, "Stages (names or paths) that should not grow with n; flagged if they do");
  cmd->add_option("--metric", flags->metric, "What the models and the RAM crossing use: rss or heap")
      ->capture_default_str();
  cmd->add_option("--mode", flags->mode, "Tracer mode of each run: full or stats")->capture_default_str();
  cmd->add_option("command", flags->command, "The command to run, after --, with {n} for the size")->expected(-1);
  cmd->callback([flags, &action] { action = [flags] { return scale_command(*flags); }; });
}

}  // namespace memstage::harness
