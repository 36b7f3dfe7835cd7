// From a run's folder (or one trace file) to the report files: used by `run` and `report`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "reports/analysis/analyzer.h"
#include "reports/model/report_model.h"

namespace memstage::harness {

// run.json: what the traced command did, as `memstage run` saw it. An argument that is
// not UTF-8 is written with U+FFFD in place of its bad bytes (JSON holds only UTF-8).
std::string run_info_json(const reports::RunInfo& run);
std::optional<reports::RunInfo> read_run_info(const std::string& dir);

// What the user chose of the analysis (`run` and `report`'s flags).
struct ReportChoices {
  std::vector<std::string> leak_suppressions;  // --suppressions
  std::optional<size_t> top_stacks;            // --top-stacks; else AnalysisOptions's
};

// Analyses a trace file, a run's folder of traces, or a folder of runs' folders (one per
// host: docs/jobs.md), with a progress bar on a terminal; `run` (else the folder's
// run.json) gives the command, exit status and duration. Throws CliError (exit 2) for
// input that is not a trace or a folder without traces. `read_ahead`: one of the traces,
// read while it was written (reports/analysis/analyzer.h). `once_stacks_final`: as
// AnalysisOptions's.
reports::Report analyze_path(const std::string& path, bool symbolize = true,
                             std::optional<reports::RunInfo> run = std::nullopt,
                             reports::TraceBeingWritten* read_ahead = nullptr, const ReportChoices& choices = {},
                             const std::function<void(const reports::StackLists&)>& once_stacks_final = {});

// Several runs as one job (the ranks of a job that ran on several hosts, each host's run
// in its own folder): every trace of every path, as analyze_path finds them, on one
// clock; the first path's run.json gives the command.
reports::Report analyze_paths(const std::vector<std::string>& paths, bool symbolize = true,
                              std::optional<reports::RunInfo> run = std::nullopt,
                              reports::TraceBeingWritten* read_ahead = nullptr, const ReportChoices& choices = {},
                              const std::function<void(const reports::StackLists&)>& once_stacks_final = {});

// A leak suppression file (`--suppressions FILE`): LSan's format, one `leak:PATTERN` a line,
// `#` comments; the patterns, for AnalysisOptions::leak_suppressions. Throws CliError naming
// the line of anything else.
std::vector<std::string> read_leak_suppressions(const std::string& path);

enum class ReportFormat { kJson, kText, kHtml, kChrome, kPprof };
ReportFormat parse_format(const std::string& name);
std::string render(const reports::Report& report, ReportFormat format);

// A fresh folder for a run's traces (`run`, `attach`): traces from an earlier run in it
// would mix into this one. Throws CliError when its path is too long for the tracer's
// file names or it cannot be written.
void prepare_output_dir(const std::string& dir);

// Writes `path`; on failure (a full disk) says so on stderr and returns false.
bool write_or_say(const std::string& path, const std::string& content);

// A reader of the traces in `dir` while their processes write them (`run`, `attach`:
// reports/analysis/analyzer.h, TraceBeingWritten), where a core is left for it: on one
// core the reading would slow the program down (its times, not its memory figures), and
// none is made. `with_stacks`: the run records stacks (not stats mode), so the main
// process's stacks are resolved while it runs too.
std::unique_ptr<reports::TraceBeingWritten> read_traces_ahead(const std::string& dir, bool with_stacks);

// The end of `run` and `attach`: analyses the folder's traces, writes report.json and
// report.html into it and, unless `quiet`, prints the text summary on stderr. What cannot
// be analysed or written is said on stderr, the traces kept. True when report.json was
// written. `read_ahead`: as for analyze_path. `analysed`, when given, gets the report
// (`attach` reads from it how the process ended).
bool write_reports(const std::string& dir, const std::optional<reports::RunInfo>& run, bool quiet,
                   reports::TraceBeingWritten* read_ahead = nullptr, reports::Report* analysed = nullptr,
                   const ReportChoices& choices = {});

}  // namespace memstage::harness
