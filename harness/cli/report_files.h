// From a run's folder (or one trace file) to the report files: used by `run` and `report`.
#pragma once

#include <optional>
#include <string>

#include "reports/analysis/analyzer.h"
#include "reports/model/report_model.h"

namespace memstage::harness {

// run.json: what the traced command did, as `memstage run` saw it.
void write_run_info(const std::string& dir, const reports::RunInfo& run);
std::optional<reports::RunInfo> read_run_info(const std::string& dir);

// Analyses a folder of traces or a single trace file, with a progress bar on a terminal.
// Throws CliError (exit 2) for input that is not a trace or a folder without traces.
reports::Report analyze_path(const std::string& path, bool symbolize = true);

enum class ReportFormat { kJson, kText, kHtml, kChrome, kPprof };
ReportFormat parse_format(const std::string& name);
std::string render(const reports::Report& report, ReportFormat format);

// Writes `content` to `path` whole (through a temporary file and a rename, so a reader
// never sees half a report). Throws CliError when it can't.
void write_file(const std::string& path, const std::string& content);

}  // namespace memstage::harness
