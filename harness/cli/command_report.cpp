// memstage report TRACE_OR_DIR... [--format json|text|html|chrome|pprof] [-o FILE]
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/cli/number_range.h"
#include "harness/cli/report_files.h"
#include "harness/files/output_files.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::harness {

void register_report(CLI::App& app, CommandAction& action) {
  struct Flags {
    std::vector<std::string> inputs;
    std::string format = "text";
    std::string output;
    bool no_symbolize = false;
    std::string suppressions_path;
    std::optional<size_t> top_stacks;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("report", "Analyse a run's traces again and write a report");
  cmd->add_option("input", flags->inputs,
                  "A run's output folder or one trace file; several make one job (e.g. one run per host)")
      ->required();
  cmd->add_option("-f,--format", flags->format, "json, text, html, chrome (Perfetto) or pprof")
      ->capture_default_str();
  cmd->add_option("-o,--output", flags->output, "Write here instead of to stdout");
  cmd->add_flag("--no-symbolize", flags->no_symbolize, "Leave frames as module+offset (fast; for golden files)");
  cmd->add_option("--top-stacks", flags->top_stacks, "Stacks listed at each peak (the run's, each stage's; default 20)")
      ->check(number_in<size_t>(1, 1000));
  cmd->add_option("--suppressions", flags->suppressions_path,
                  "Leaks to hold apart with the runtime's: a file of 'leak:PATTERN' lines, as LSan's");
  cmd->callback([flags, &action] {
    action = [flags] {
      const ReportFormat format = parse_format(flags->format);
      ReportChoices choices;
      if (!flags->suppressions_path.empty()) choices.leak_suppressions = read_leak_suppressions(flags->suppressions_path);
      choices.top_stacks = flags->top_stacks;
      const auto report = analyze_paths(flags->inputs, !flags->no_symbolize, std::nullopt, nullptr, choices);
      for (const auto& warning : report.warnings) fprintf(stderr, "memstage: warning: %s\n", reports::terminal_text(warning).c_str());
      const std::string content = render(report, format);
      if (!flags->output.empty()) {
        files::write_named_output_file(flags->output, content);
      } else {
        if (format == ReportFormat::kPprof && isatty(STDOUT_FILENO)) {
          throw CliError("pprof output is binary: give a file with -o");
        }
        fwrite(content.data(), 1, content.size(), stdout);
      }
      return 0;
    };
  });
}

}  // namespace memstage::harness
