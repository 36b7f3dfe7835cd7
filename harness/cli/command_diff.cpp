// memstage diff A B [--html FILE] [--format text|json]
// Two reports (report.json files or run folders) side by side, stage by stage.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/cli/report_files.h"
#include "harness/files/output_files.h"
#include "harness/compare/diff_model.h"
#include "harness/files/report_json.h"
#include "reports/render/text/terminal_text.h"
#include "reports/render/json/json_report.h"

namespace memstage::harness {

namespace fs = std::filesystem;

namespace {

struct DiffFlags {
  std::string a, b;
  std::string html;
  std::string format = "text";
};

// A report.json, a folder holding one, or a folder of traces not yet analysed.
nlohmann::json report_at(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec) && !fs::exists(files::report_json_path(path), ec)) {
    return nlohmann::json::parse(reports::report_to_json(analyze_path(path)).dump());
  }
  try {
    return files::read_report_json(path);
  } catch (const files::ReportFileError& e) {
    throw CliError(std::string("diff: ") + e.what());
  }
}

int diff(const DiffFlags& flags) {
  if (flags.format != "text" && flags.format != "json") throw CliError("diff: --format is text or json");
  compare::DiffResult result;
  try {
    result = compare::build_diff(report_at(flags.a), report_at(flags.b), flags.a, flags.b);
  } catch (const files::ReportFileError& e) {
    throw CliError(std::string("diff: ") + e.what());
  }
  if (!flags.html.empty()) files::write_named_output_file(flags.html, compare::render_diff_html(result));
  const std::string text =
      flags.format == "json" ? compare::diff_to_json(result).dump(2) + "\n" : compare::render_diff_text(result);
  printf("%s", flags.format == "json" ? text.c_str() : reports::terminal_lines(text).c_str());
  return 0;
}

}  // namespace

void register_diff(CLI::App& app, CommandAction& action) {
  auto flags = std::make_shared<DiffFlags>();
  CLI::App* cmd = app.add_subcommand("diff", "Two reports side by side, stage by stage, with deltas (B - A)");
  cmd->add_option("a", flags->a, "Report A: report.json or a run folder")->required();
  cmd->add_option("b", flags->b, "Report B: report.json or a run folder")->required();
  cmd->add_option("--html", flags->html, "Also write an HTML page to FILE");
  cmd->add_option("--format", flags->format, "text or json, on stdout")->capture_default_str();
  cmd->callback([flags, &action] { action = [flags] { return diff(*flags); }; });
}

}  // namespace memstage::harness
