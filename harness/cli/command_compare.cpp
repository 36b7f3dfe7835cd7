// memstage compare [--allocators A,B,…] [--variant NAME='CMD ARGS']… [--tune A:K=V,…]… [--suggest [STAGE]] [--repeat N] [-o DIR] [-- CMD ARGS…]
// Runs the same work several ways (allocators, pipelines, or both), each through
// `memstage run` (this very binary), and writes DIR/compare.json, DIR/compare.html and a
// table on stdout. The logic lives in harness/compare/; this file only runs things.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "harness/cli/child_process.h"
#include "harness/cli/cli_error.h"
#include "harness/cli/command_compare.h"
#include "harness/cli/commands.h"
#include "harness/cli/number_range.h"
#include "harness/cli/option_lists.h"
#include "harness/cli/report_files.h"
#include "harness/compare/compare_model.h"
#include "harness/compare/compare_render.h"
#include "harness/compare/format.h"
#include "harness/compare/run_plan.h"
#include "harness/compare/suggest.h"
#include "harness/files/output_files.h"
#include "harness/files/report_figures.h"
#include "harness/files/report_json.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::harness {

namespace fs = std::filesystem;
using namespace memstage::compare;

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw CliError("compare: cannot find the memstage binary (/proc/self/exe)");
  return std::string(buf, n);
}

// The traced command's output goes to the run's output.log, not to our stdout, so the
// table printed at the end stays readable (and a chatty program does not slow the runs
// down through a terminal).
class RedirectOutput {
 public:
  explicit RedirectOutput(const std::string& log_path) {
    fflush(stdout);
    fflush(stderr);
    // The run's folder was made afresh: nothing of this name, link or not, is there.
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw CliError("compare: cannot write " + log_path);
    saved_out_ = dup(1);
    saved_err_ = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  ~RedirectOutput() {
    dup2(saved_out_, 1);
    dup2(saved_err_, 2);
    close(saved_out_);
    close(saved_err_);
  }

 private:
  int saved_out_ = -1, saved_err_ = -1;
};

RunRecord execute(const PlannedRun& planned, const Subject& subject, const std::string& out_dir,
                  const std::string& memstage, unsigned max_depth) {
  RunRecord record;
  record.planned = planned;
  const std::string dir = out_dir + "/" + planned.dir_name;
  std::error_code ec;
  fs::remove_all(dir, ec);  // a report left from an earlier compare must not be read as this run's
  files::create_output_folder(dir);
  std::vector<std::string> argv = {memstage, "run", "-q", "-o", dir, "--mode", mode_name(planned.mode),
                                   "--max-depth", std::to_string(max_depth)};
  // A tuning reaches the command only: memstage's own jemalloc would read MALLOC_CONF too.
  if (subject.allocator) {
    for (const auto& [name, value] : subject.allocator->environment) argv.insert(argv.end(), {"--env", name + "=" + value});
  }
  argv.push_back("--");
  argv.insert(argv.end(), subject.command.begin(), subject.command.end());
  // `memstage run` puts the tracer first and appends this LD_PRELOAD after it, so the
  // tracer sees every call and forwards it to the allocator. Empty: glibc, and whatever
  // the caller had preloaded is dropped so that "glibc" means glibc.
  std::vector<std::pair<std::string, std::string>> env;
  if (subject.allocator) env.emplace_back("LD_PRELOAD", subject.allocator->library);
  ChildResult child;
  try {
    RedirectOutput redirect(dir + "/output.log");
    child = run_child(argv, env);
  } catch (const CliError& e) {
    record.error = e.what();
    return record;
  }
  record.exit_code = child.exit_code;
  std::error_code missing;
  if (!fs::exists(dir + "/report.json", missing)) {
    record.error = "no report.json (exit code " + std::to_string(child.exit_code) + "; see " + planned.dir_name +
                   "/output.log)";
    return record;
  }
  try {
    record.report = files::read_report_json(dir);
    // Read as build_compare will, so that a malformed figure fails this run, not the comparison.
    const files::ReportFigures figures = files::read_figures(*record.report, planned.dir_name + "/report.json");
    record.duration_s = figures.totals[files::Figure::kDurationS].value_or(child.duration_s);
  } catch (const files::ReportFileError& e) {
    record.report.reset();
    record.error = e.what();
  }
  return record;
}

}  // namespace

std::vector<AllocatorChoice> allocator_choices(const CompareFlags& flags) {
  try {
    std::vector<AllocatorChoice> choices;
    for (const auto& a : split_commas(flags.allocators)) choices.push_back(resolve_allocator(a));
    const size_t named = choices.size();
    for (const auto& spec : flags.tuning.specs) choices.push_back(tuned_allocator(parse_tuning(spec)));
    for (size_t i = 0; flags.tuning.suggest && i < named; ++i) {
      for (const auto& spec : suggestion_grid(choices[i].name)) {
        // A setting of the grid also given with --tune is run once.
        const bool given = std::any_of(choices.begin(), choices.end(), [&](const auto& c) { return c.name == spec; });
        if (!given) choices.push_back(tuned_allocator(parse_tuning(spec)));
      }
    }
    return choices;
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
}

void add_tuning_options(CLI::App* cmd, TuningFlags& flags) {
  cmd->add_option("--tune", flags.specs,
                  "ALLOCATOR:NAME=VALUE,... (repeatable): one more subject, the allocator under these settings, e.g. "
                  "glibc:MALLOC_ARENA_MAX=2 or jemalloc:dirty_decay_ms=0,narenas=2")
      ->allow_extra_args(false);
  cmd->add_option("--suggest", flags.suggest_stage,
                  "Sweep a small grid of settings per allocator and rank them by peak RSS (by STAGE's, if given)")
      ->expected(0, 1);
}

void read_tuning_options(const CLI::App* cmd, TuningFlags& flags) { flags.suggest = cmd->count("--suggest") > 0; }

int run_compare(const CompareFlags& flags) {
  if (flags.variants.empty() && flags.command.empty()) {
    throw CliError("compare: give a command after -- or --variant NAME='CMD ARGS' (twice or more)");
  }
  if (!flags.variants.empty() && !flags.command.empty()) {
    throw CliError("compare: give either --variant options or a command after --, not both");
  }
  std::vector<Subject> subjects;
  try {
    std::vector<Variant> variants;
    for (const auto& spec : flags.variants) {
      auto [name, command] = parse_variant(spec);
      variants.push_back({name, command});
    }
    subjects = make_subjects(variants, flags.command, allocator_choices(flags));
  } catch (const std::invalid_argument& e) {
    throw CliError(std::string("compare: ") + e.what());
  }
  if (subjects.size() < 2 && flags.repeat < 2) {
    fprintf(stderr, "memstage: compare: one subject, one repeat: nothing to set side by side\n");
  }
  const std::string out_dir =
      fs::absolute(flags.output_dir.empty() ? "memstage.compare." + std::to_string(getpid()) : flags.output_dir)
          .lexically_normal()
          .string();
  files::create_output_folder(out_dir);

  const std::string memstage = self_exe();
  const std::vector<PlannedRun> plan = plan_runs(subjects, flags.repeat);
  std::vector<RunRecord> records;
  for (size_t i = 0; i < plan.size(); ++i) {
    const Subject& subject = subjects[plan[i].subject];
    fprintf(stderr, "memstage: compare [%zu/%zu] %s, %s run %u ... ", i + 1, plan.size(), subject.name.c_str(),
            mode_name(plan[i].mode), plan[i].repeat + 1);
    RunRecord record = execute(plan[i], subject, out_dir, memstage, flags.max_depth);
    if (record.report) {
      fprintf(stderr, "%s%s\n", format_seconds(record.duration_s).c_str(),
              record.exit_code ? (" (exit code " + std::to_string(record.exit_code) + ")").c_str() : "");
    } else {
      fprintf(stderr, "failed: %s\n", record.error.c_str());
    }
    records.push_back(std::move(record));
  }
  CompareResult result = build_compare(subjects, records, flags.repeat);
  result.notes = flags.notes;
  nlohmann::ordered_json json = compare_to_json(result);
  std::optional<Suggestions> suggestions;
  if (flags.tuning.suggest) {
    try {
      suggestions = rank_settings(result, flags.tuning.suggest_stage);
      json["suggestions"] = suggestions_json(*suggestions);
    } catch (const std::invalid_argument& e) {
      fprintf(stderr, "memstage: compare: %s\n", e.what());
    }
  }
  files::write_output_file(out_dir + "/compare.json", json.dump(2) + "\n");
  files::write_output_file(out_dir + "/compare.html", render_compare_html(result));
  printf("%s", reports::terminal_lines(render_compare_text(result)).c_str());
  if (suggestions) printf("\n%s", reports::terminal_lines(render_suggestions_text(*suggestions)).c_str());
  fprintf(stderr, "memstage: wrote %s/compare.json and compare.html\n", out_dir.c_str());
  bool all_ok = true;
  for (const RunRecord& r : records) all_ok = all_ok && r.report && r.exit_code == 0;
  if (!all_ok) fprintf(stderr, "memstage: compare: some runs failed or exited non-zero (see the table)\n");
  if (flags.tuning.suggest && !suggestions) return 2;  // --suggest STAGE named no stage: said above
  return all_ok ? 0 : 1;
}

void register_compare(CLI::App& app, CommandAction& action) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* cmd = app.add_subcommand("compare", "Run the same work under several allocators or pipelines, side by side");
  cmd->add_option("--allocators", flags->allocators,
                  "Comma-separated: glibc, jemalloc, tcmalloc, mimalloc, or paths to allocator .so files");
  cmd->add_option("--variant", flags->variants,
                  "NAME='CMD ARGS' (repeatable); the command is split like a shell would, quotes and "
                  "backslashes, without expanding anything")
      ->allow_extra_args(false);  // one word per --variant: never the words after "--"
  cmd->add_option("--repeat", flags->repeat, "Stats-mode runs per subject, for time")
      ->check(number_in(1, 1000))
      ->capture_default_str();
  cmd->add_option("-o,--output", flags->output_dir, "Folder for the runs and compare.json/html (default memstage.compare.PID)");
  cmd->add_option("--max-depth", flags->max_depth, "Frames kept per stack in the full-mode runs")
      ->check(number_in(1, 256))
      ->capture_default_str();
  add_tuning_options(cmd, flags->tuning);
  cmd->add_option("command", flags->command, "The command to run, after --")->expected(-1);
  cmd->callback([cmd, flags, &action] {
    read_tuning_options(cmd, flags->tuning);
    action = [flags] { return run_compare(*flags); };
  });
}

}  // namespace memstage::harness
