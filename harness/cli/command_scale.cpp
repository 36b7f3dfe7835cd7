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
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "harness/cli/child_process.h"
#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/cli/report_files.h"
#include "harness/cli/option_lists.h"
#include "harness/cli/sizes.h"
#include "harness/files/output_files.h"
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

int scale_command(const ScaleFlags& flags) {
  if (flags.command.empty()) throw CliError("scale: no command given (memstage scale [options] -- CMD ... {n} ...)");
  if (std::none_of(flags.command.begin(), flags.command.end(),
                   [](const std::string& a) { return a.find("{n}") != std::string::npos; })) {
    throw CliError("scale: no argument of the command holds {n}, the place for the size");
  }
  if (flags.mode != "full" && flags.mode != "stats") throw CliError("scale: --mode must be full or stats");
  if (flags.metric != "rss" && flags.metric != "heap") throw CliError("scale: --metric must be rss or heap");
  const auto ram = parse_size(flags.ram);
  if (!ram || *ram == 0) throw CliError("scale: --ram: '" + flags.ram + "' is not a size (e.g. 16GiB)");
  std::vector<uint64_t> sizes;
  for (const auto& text : split_commas(flags.sizes)) {
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

  const std::string dir =
      fs::absolute(flags.output_dir.empty()
                       ? "memstage-scale." + fs::path(flags.command[0]).filename().string() + "." + std::to_string(getpid())
                       : flags.output_dir)
          .lexically_normal()
          .string();
  files::create_output_folder(dir);
  std::error_code ec;
  // Each size is a plain `memstage run` of this same binary: one code path for tracing.
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw CliError("cannot find the memstage binary (/proc/self/exe)");

  scale::ScaleInput input;
  input.command = flags.command;
  input.ram_bytes = double(*ram);
  input.metric = flags.metric == "heap" ? scale::Metric::kHeap : scale::Metric::kRss;
  input.mode = flags.mode;
  input.flat = split_commas(flags.flat);
  input.totals.name = "total";
  for (uint64_t n : sizes) input.sizes.push_back(double(n));

  std::map<std::string, size_t> stage_index;  // path -> index in input.stages
  std::string stopped;                        // why the remaining sizes are not run
  bool any_failed = false;
  for (uint64_t size : sizes) {
    scale::RunRecord record;
    record.n = double(size);
    if (!stopped.empty()) {
      record.status = "not run";
      record.reason = stopped;
      input.runs.push_back(record);
      continue;
    }
    // Skip what the fit so far says would not fit: peak RSS, whatever --metric says,
    // because RSS is what the machine runs out of.
    if (input.totals.points.size() >= 2) {
      record.predicted_peak_bytes = scale::predict(metric_points(input.totals, scale::Metric::kRss), record.n);
      if (record.predicted_peak_bytes && *record.predicted_peak_bytes > input.ram_bytes) {
        record.status = "skipped";
        record.reason = "predicted " + format_bytes(*record.predicted_peak_bytes) + " > RAM " + format_bytes(input.ram_bytes);
        fprintf(stderr, "memstage: scale n=%llu skipped: %s\n", (unsigned long long)size, record.reason.c_str());
        input.runs.push_back(record);
        continue;
      }
    }
    record.dir = "n" + std::to_string(size);
    const std::string run_dir = dir + "/" + record.dir;
    fs::remove(run_dir + "/report.json", ec);
    files::create_output_folder(run_dir);
    std::vector<std::string> argv = {self, "run", "-q", "-o", run_dir, "--mode", flags.mode, "--"};
    for (const auto& arg : flags.command) argv.push_back(substitute(arg, std::to_string(size)));
    fprintf(stderr, "memstage: scale n=%llu ...", (unsigned long long)size);
    const ChildResult child = run_logged(argv, run_dir + "/output.log");
    record.exit_code = child.exit_code;
    record.duration_s = child.duration_s;

    nlohmann::json report;
    bool have_report = false;
    try {
      report = files::read_report_json(run_dir);
      have_report = true;
    } catch (const files::ReportFileError&) {
    }
    if (!have_report || child.exit_code != 0) {
      record.status = "failed";
      record.reason = !have_report ? "no report (see " + record.dir + "/output.log)"
                                   : "exit code " + std::to_string(child.exit_code);
      fprintf(stderr, " failed: %s\n%s", record.reason.c_str(), last_lines(run_dir + "/output.log", 5).c_str());
      any_failed = true;
      // A failure at one size may be about that input (a label missing from a small
      // sample); the next size is still worth running. A kill by signal is most likely
      // the OOM killer, and larger sizes would only die the same way.
      if (child.signal) stopped = "stopped after n=" + std::to_string(size) + " was killed by signal " +
                                  std::to_string(*child.signal);
      input.runs.push_back(record);
      continue;
    }
    record.status = "ok";
    record.peak_heap_bytes = report["totals"].value("peak_heap_bytes", 0.0);
    record.peak_rss_bytes = report["totals"].value("peak_rss_bytes", 0.0);
    fprintf(stderr, " peak heap %s, peak RSS %s, %.2f s\n", format_bytes(record.peak_heap_bytes).c_str(),
            format_bytes(record.peak_rss_bytes).c_str(), record.duration_s);
    input.totals.points.push_back({record.n, record.peak_heap_bytes, record.peak_rss_bytes});
    // A stage that appears several times in a run (same path) counts with its largest peak.
    std::map<std::string, scale::SeriesPoint> this_run;
    for (const auto& stage : report.value("stages", nlohmann::json::array())) {
      const std::string path = stage.value("path", stage.value("name", ""));
      if (!stage_index.count(path)) {
        stage_index[path] = input.stages.size();
        input.stages.push_back({stage.value("name", path), path, {}});
      }
      auto& point = this_run[path];
      point.n = record.n;
      point.peak_heap_bytes = std::max(point.peak_heap_bytes, stage.value("peak_heap_bytes", 0.0));
      point.peak_rss_bytes = std::max(point.peak_rss_bytes, stage.value("peak_rss_bytes", 0.0));
    }
    for (const auto& [path, point] : this_run) input.stages[stage_index[path]].points.push_back(point);
    if (record.peak_rss_bytes > input.ram_bytes) {
      stopped = "stopped: n=" + std::to_string(size) + " measured peak RSS " + format_bytes(record.peak_rss_bytes) +
                " > RAM " + format_bytes(input.ram_bytes);
    }
    input.runs.push_back(record);
  }

  const scale::ScaleAnalysis analysis = scale::analyze(input);
  files::write_output_file(dir + "/scale.json", scale::render_scale_json(analysis));
  files::write_output_file(dir + "/scale.html", scale::render_scale_html(analysis));
  const std::string text = scale::render_scale_text(analysis, !same_terminal(STDOUT_FILENO, STDERR_FILENO));
  fputs(reports::terminal_lines(text).c_str(), stdout);
  fflush(stdout);
  fprintf(stderr, "memstage: wrote %s/scale.json and scale.html\n", dir.c_str());
  return any_failed ? 1 : 0;
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
