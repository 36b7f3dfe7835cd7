// memstage gate REPORT [--budget FILE] [--baseline OLD --max-growth PCT] [--junit FILE] [--json FILE] [--github]
// A report (report.json or a run folder) as a CI verdict: prints limit, measured and
// verdict per check; exits 0 when all pass, 1 when any is over, 2 for input errors.
// The logic lives in harness/gate/ so that it is unit-tested without the CLI.
#include <memory>

#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/gate/gate.h"

namespace memstage::harness {

namespace {

struct GateFlags {
  std::string report_path;
  std::string max_growth_text;
  gate::GateOptions options;
};

int gate_command(GateFlags& flags) {
  try {
    if (!flags.max_growth_text.empty()) flags.options.max_growth = gate::parse_max_growth(flags.max_growth_text);
    return gate::run_gate(flags.report_path, flags.options);
  } catch (const gate::GateError& e) {
    throw CliError(e.what(), 2);
  }
}

}  // namespace

void register_gate(CLI::App& app, CommandAction& action) {
  auto flags = std::make_shared<GateFlags>();
  CLI::App* cmd = app.add_subcommand("gate", "Check a report against a memory budget or a baseline (exit 1 when over)");
  cmd->add_option("report", flags->report_path, "report.json, or a run folder holding one")->required();
  cmd->add_option("--budget", flags->options.budget_path, "Budget file: limits on totals and stages (docs/budget.md)");
  cmd->add_option("--baseline", flags->options.baseline_path, "An earlier report to compare with");
  cmd->add_option("--max-growth", flags->max_growth_text, "With --baseline: allowed growth, e.g. 5% or 0.05");
  cmd->add_option("--junit", flags->options.junit_path, "Write JUnit XML here (one testcase per check)");
  cmd->add_option("--json", flags->options.json_path, "Write the checks as JSON here (for programs that act on them)");
  cmd->add_flag("--github", flags->options.github, "Print GitHub Actions ::error annotations for failures");
  cmd->callback([flags, &action] { action = [flags] { return gate_command(*flags); }; });
}

}  // namespace memstage::harness
