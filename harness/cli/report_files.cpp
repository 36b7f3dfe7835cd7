#include "harness/cli/report_files.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>

#include "harness/cli/analysis_allocator.h"
#include "harness/cli/cli_error.h"
#include "harness/cli/progress_bar.h"
#include "harness/files/input_files.h"
#include "harness/files/output_files.h"
#include "profiler/preload/options.h"
#include "profiler/trace/pending_chunks.h"
#include "profiler/trace/trace_reader.h"
#include "reports/render/export/chrome_trace.h"
#include "reports/render/export/pprof.h"
#include "reports/render/html/render_html.h"
#include "reports/render/json/json_report.h"
#include "reports/render/model_json.h"
#include "reports/render/text/terminal_text.h"
#include "reports/render/text/text_report.h"

namespace memstage::harness {

namespace fs = std::filesystem;

std::string run_info_json(const reports::RunInfo& run) {
  nlohmann::ordered_json j;
  j["command"] = run.command;
  if (run.pid) j["pid"] = *run.pid;
  j["exit_code"] = run.exit_code;
  j["signal"] = run.signal ? nlohmann::ordered_json(*run.signal) : nlohmann::ordered_json(nullptr);
  j["duration_s"] = run.duration_s;
  if (run.max_rss_bytes) j["max_rss_bytes"] = *run.max_rss_bytes;
  if (run.ram_limit_bytes) j["ram_limit_bytes"] = *run.ram_limit_bytes;
  if (run.oom_kill) j["oom_kill"] = reports::model_json::oom_kill_json<nlohmann::ordered_json>(run.oom_kill);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::optional<reports::RunInfo> read_run_info(const std::string& dir) {
  try {
    const auto j = nlohmann::json::parse(files::read_input_file(dir + "/run.json", "run.json", files::kMaxSmallInputBytes));
    reports::RunInfo run;
    run.command = j.at("command").get<std::vector<std::string>>();
    if (j.contains("pid")) run.pid = j.at("pid").get<uint64_t>();
    run.exit_code = j.at("exit_code").get<int>();
    if (!j.at("signal").is_null()) run.signal = j.at("signal").get<int>();
    run.duration_s = j.at("duration_s").get<double>();
    if (j.contains("max_rss_bytes")) run.max_rss_bytes = j.at("max_rss_bytes").get<uint64_t>();
    if (j.contains("ram_limit_bytes")) run.ram_limit_bytes = j.at("ram_limit_bytes").get<uint64_t>();
    if (j.contains("oom_kill")) {
      const auto& o = j.at("oom_kill");
      reports::OomKill oom{o.at("cgroup").get<std::string>(), o.at("cgroup_version").get<int>(), std::nullopt,
                           o.at("processes_killed").get<uint64_t>()};
      if (!o.at("limit_bytes").is_null()) oom.limit_bytes = o.at("limit_bytes").get<uint64_t>();
      run.oom_kill = oom;
    }
    return run;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged run.json only costs the exit code and duration
  } catch (const files::InputError&) {
    return std::nullopt;  // as does a missing one
  }
}

namespace {

// The traces a path names: a trace file; a run's folder, its traces; a folder of runs' folders
// (one per host, docs/jobs.md), the traces of each, folders in name order.
std::vector<std::string> traces_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec)) throw CliError(path + ": no such file or directory");
    return {path};
  }
  std::vector<std::string> traces = reports::find_traces(path);
  if (traces.empty()) {
    std::vector<std::string> runs;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_directory(ec)) runs.push_back(entry.path().string());
    }
    std::sort(runs.begin(), runs.end());
    for (const auto& run : runs) {
      const auto found = reports::find_traces(run);
      traces.insert(traces.end(), found.begin(), found.end());
    }
  }
  if (traces.empty()) throw CliError(path + " holds no memstage trace (trace.*.mst), nor do its folders");
  // memstage run drains them after the death; where it died too, here (pending_chunks.h).
  for (const auto& trace : traces) trace::drain_pending_chunks(trace);
  return traces;
}

// Several paths make one job (one run per host). Runs that never ran at the same time were
// most likely given together by mistake: said, not refused.
void warn_if_runs_apart(reports::Report& report) {
  std::vector<std::pair<double, double>> spans;
  for (const auto& p : report.processes) spans.emplace_back(p.start_s, std::max(p.start_s, p.end_s));
  std::sort(spans.begin(), spans.end());
  constexpr double kApartS = 1.0;
  double covered_to = spans.empty() ? 0 : spans.front().second;
  for (const auto& [start, end] : spans) {
    if (start > covered_to + kApartS) {
      report.warnings.push_back(fmt::format(
          "the traces given were not running at the same time (nothing ran from {:.1f} s to {:.1f} s on the job's "
          "clock): they look like separate runs, reported here as one job; give one run's folder to report it alone",
          covered_to, start));
      return;
    }
    covered_to = std::max(covered_to, end);
  }
}

}  // namespace

reports::Report analyze_path(const std::string& path, bool symbolize, std::optional<reports::RunInfo> run,
                             reports::TraceBeingWritten* read_ahead, const ReportChoices& choices,
                             const std::function<void(const reports::StackLists&)>& once_stacks_final) {
  return analyze_paths({path}, symbolize, std::move(run), read_ahead, choices, once_stacks_final);
}

reports::Report analyze_paths(const std::vector<std::string>& paths, bool symbolize,
                              std::optional<reports::RunInfo> run, reports::TraceBeingWritten* read_ahead,
                              const ReportChoices& choices,
                              const std::function<void(const reports::StackLists&)>& once_stacks_final) {
  std::vector<std::string> traces;
  for (const auto& path : paths) {
    const auto found = traces_of(path);
    traces.insert(traces.end(), found.begin(), found.end());
  }
  // The run's record (exit code, duration) from the first path's folder.
  std::error_code ec;
  const std::string& first = paths.front();
  std::string dir = fs::is_directory(first, ec) ? first : fs::path(first).parent_path().string();
  if (dir.empty()) dir = ".";
  ProgressBar progress("analysing");
  reports::AnalysisOptions options;
  options.symbolize = symbolize;
  options.leak_suppressions = choices.leak_suppressions;
  if (choices.top_stacks) options.top_stacks = *choices.top_stacks;
  options.progress = [&](uint64_t done, uint64_t total) { progress.update(done, total); };
  if (return_freed_pages) options.return_freed_pages = return_freed_pages;
  options.once_stacks_final = once_stacks_final;
  try {
    reports::Report report = reports::analyze(traces, run ? run : read_run_info(dir), options, read_ahead);
    if (paths.size() > 1) warn_if_runs_apart(report);
    return report;
  } catch (const trace::NotATraceError& e) {
    throw CliError(e.what());
  } catch (const std::runtime_error& e) {
    throw CliError(e.what());
  }
}

std::vector<std::string> read_leak_suppressions(const std::string& path) {
  std::string text;
  try {
    text = files::read_input_file(path, "suppressions", files::kMaxSmallInputBytes);
  } catch (const files::InputError& e) {
    throw CliError(e.what());
  }
  std::vector<std::string> patterns;
  size_t line_number = 0;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line.starts_with('#')) continue;
    if (!line.starts_with("leak:") || line.size() == 5) {
      throw CliError(fmt::format("{}:{}: expected 'leak:PATTERN' (a function, source file or module; * matches "
                                 "anything), not '{}'", path, line_number, line));
    }
    patterns.push_back(line.substr(5));
  }
  return patterns;
}

ReportFormat parse_format(const std::string& name) {
  if (name == "json") return ReportFormat::kJson;
  if (name == "text") return ReportFormat::kText;
  if (name == "html") return ReportFormat::kHtml;
  if (name == "chrome") return ReportFormat::kChrome;
  if (name == "pprof") return ReportFormat::kPprof;
  throw CliError("unknown format '" + name + "' (json, text, html, chrome, pprof)");
}

std::string render(const reports::Report& report, ReportFormat format) {
  switch (format) {
    case ReportFormat::kJson: return reports::render_json(report);
    case ReportFormat::kText: return reports::render_text(report);
    case ReportFormat::kHtml: return reports::render_html(report);
    case ReportFormat::kChrome: return reports::render_chrome_trace(report);
    case ReportFormat::kPprof: return reports::render_pprof(report);
  }
  return {};
}

void prepare_output_dir(const std::string& dir) {
  // The tracer names its files inside the folder with paths that must fit PATH_MAX.
  if (dir.size() > preload::kMaxOutputDirBytes) {
    throw CliError("the output folder's path is " + std::to_string(dir.size()) + " bytes; at most " +
                   std::to_string(preload::kMaxOutputDirBytes) + " are supported");
  }
  std::error_code ec;
  files::create_output_folder(dir);
  if (access(dir.c_str(), W_OK) != 0) throw CliError("output folder " + dir + " is not writable");
  // An earlier run's traces in the folder would be read as this run's processes: they go,
  // and the user is told, since they cannot be had back.
  size_t removed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("trace.") && name.ends_with(".mst") && fs::remove(entry.path(), ec)) ++removed;
    if (name.starts_with("trace.") && name.ends_with(std::string(".mst") + trace::kPendingSuffix)) fs::remove(entry.path(), ec);
  }
  // And what an earlier run's killed processes left in /dev/shm for this folder.
  if (const std::string prefix = trace::shared_memory_pending_prefix(dir); !prefix.empty()) {
    const fs::path shm = fs::path(prefix).parent_path();
    const std::string start = fs::path(prefix).filename().string();
    for (const auto& entry : fs::directory_iterator(shm, ec)) {
      if (entry.path().filename().string().starts_with(start)) fs::remove(entry.path(), ec);
    }
  }
  if (removed) {
    fprintf(stderr, "memstage: removed %zu trace%s of an earlier run from %s\n", removed, removed == 1 ? "" : "s",
            reports::terminal_text(dir).c_str());
  }
}

bool write_or_say(const std::string& path, const std::string& content) {
  try {
    files::write_output_file(path, content);
    return true;
  } catch (const files::OutputError& e) {
    fprintf(stderr, "memstage: %s\n", e.what());
    return false;
  }
}

std::unique_ptr<reports::TraceBeingWritten> read_traces_ahead(const std::string& dir, bool with_stacks) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) < 2) return nullptr;
  return std::make_unique<reports::TraceBeingWritten>(dir, reports::AnalysisOptions{}, with_stacks);
}

bool write_reports(const std::string& dir, const std::optional<reports::RunInfo>& run, bool quiet,
                   reports::TraceBeingWritten* read_ahead, reports::Report* analysed, const ReportChoices& choices) {
  reports::Report report;
  // The page's call tree made beside the analysis's last steps, on the core that idles then:
  // after the program's exit the page was the longest wait (docs/performance.md). In this
  // thread's arena, so that the page's sums take the pages its indexes leave.
  std::optional<reports::StacksCallTree> call_tree;
  const unsigned arena = this_thread_arena ? this_thread_arena() : 0;
  const auto make_call_tree = [&call_tree, arena](const reports::StackLists& lists) {
    if (use_arena) use_arena(arena);
    call_tree = reports::make_call_tree(lists);
  };
  try {
    report = analyze_path(dir, true, run, read_ahead, choices, make_call_tree);
  } catch (const CliError& e) {
    fprintf(stderr, "memstage: %s (the traces are kept in %s)\n", e.what(), reports::terminal_text(dir).c_str());
    return false;
  }
  // The JSON renders on a second core while the page renders on this one (the longer of
  // the two, on a large report: torch_small.py's run, both 0.49 s one after the other,
  // 0.40 s side by side; the page on the second thread, 0.46 s). Both only read the report.
  // A renderer's exception reaches the caller as before: the future rethrows the JSON's,
  // and is waited for before the page's leaves.
  std::future<std::string> json = std::async(std::launch::async, [&report] { return render(report, ReportFormat::kJson); });
  const std::string html = reports::render_html(report, call_tree ? &*call_tree : nullptr);
  call_tree.reset();
  const bool json_written = write_or_say(dir + "/report.json", json.get());
  const bool html_written = write_or_say(dir + "/report.html", html);
  if (!quiet) {
    const std::string summary = reports::render_text(report);
    fprintf(stderr, "%s\n", summary.c_str());
    if (json_written && html_written) {
      fprintf(stderr, "memstage: wrote %s/report.json and report.html\n", reports::terminal_text(dir).c_str());
    }
  }
  if (analysed) *analysed = std::move(report);
  return json_written;
}

}  // namespace memstage::harness
