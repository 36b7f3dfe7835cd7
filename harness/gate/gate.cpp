#include "harness/gate/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "harness/cli/sizes.h"
#include "harness/files/input_files.h"
#include "harness/files/output_files.h"
#include "harness/files/report_figures.h"
#include "harness/files/report_json.h"
#include "reports/render/html/html_page.h"
#include "reports/render/text/human_units.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::gate {

using Json = nlohmann::json;
// Budgets keep the file's key order, so checks are listed as the user wrote them.
using BudgetJson = nlohmann::ordered_json;

namespace {

constexpr Metric kAllMetrics[] = {Metric::kPeakHeap,         Metric::kPeakRss,         Metric::kLeaked,
                                  Metric::kFragmentation,    Metric::kPeakDevice,      Metric::kPeakHeapIncrease,
                                  Metric::kPeakRssIncrease,  Metric::kRetained};
// Growth is about sizes; a fragmentation ratio moves with the allocator, not the program.
constexpr Metric kGrowthMetrics[] = {Metric::kPeakHeap, Metric::kPeakRss, Metric::kLeaked};
constexpr const char* kExpectedMetrics =
    "peak_heap, peak_rss, leaked, fragmentation, peak_device, and for stages peak_heap_increase, peak_rss_increase, retained";

std::optional<Metric> metric_from_key(const std::string& key) {
  for (Metric m : kAllMetrics) {
    if (metric_key(m) == key) return m;
  }
  return std::nullopt;
}

std::string format_percent(double ratio) {
  const double percent = ratio * 100;
  // "30%" for round figures as budgets are written, "12.3%" for measured ones.
  if (std::fabs(percent - std::round(percent)) < 1e-9) return fmt::format("{:.0f}%", percent);
  return fmt::format("{:.1f}%", percent);
}

std::string format_value(Metric metric, double value) {
  if (metric == Metric::kFragmentation) return format_percent(value);
  // Clamped: a limit of a huge growth must not overflow the conversion.
  return reports::format_bytes(value >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(std::round(std::max(0.0, value))));
}

// What a budget writes for a size: "512MiB", "0", or a plain non-negative integer.
double parse_size_value(const BudgetJson& value, const std::string& source, const std::string& field) {
  if (value.is_string()) {
    if (auto bytes = harness::parse_size(value.get<std::string>())) return static_cast<double>(*bytes);
  } else if (value.is_number_unsigned()) {
    return value.get<double>();
  } else if (value.is_number_float()) {
    const double bytes = value.get<double>();
    if (bytes >= 0 && std::floor(bytes) == bytes && bytes < 1.8e19) return bytes;
  }
  throw GateError(fmt::format("{}: \"{}\": {} is not a size (write bytes, or e.g. \"512MiB\", \"1.5GiB\")", source,
                              field, value.dump()));
}

// A fragmentation limit: a number in 0..1 or a string "25%" / "0.25".
double parse_ratio_value(const BudgetJson& value, const std::string& source, const std::string& field) {
  std::optional<double> ratio;
  if (value.is_number()) {
    ratio = value.get<double>();
  } else if (value.is_string()) {
    ratio = parse_fraction(value.get<std::string>());
  }
  if (ratio && *ratio >= 0 && *ratio <= 1) return *ratio;
  throw GateError(fmt::format("{}: \"{}\": {} is not a ratio (write a number in 0..1 or a percentage like \"30%\")",
                              source, field, value.dump()));
}

std::vector<Limit> parse_limits(const BudgetJson& object, const std::string& source, const std::string& prefix) {
  if (!object.is_object()) {
    throw GateError(fmt::format("{}: \"{}\" must be an object of limits ({}), not {}", source, prefix,
                                kExpectedMetrics, object.type_name()));
  }
  std::vector<Limit> limits;
  for (const auto& [key, value] : object.items()) {
    const std::string field = prefix + "." + key;
    const auto metric = metric_from_key(key);
    if (!metric) throw GateError(fmt::format("{}: unknown field \"{}\" (expected {})", source, field, kExpectedMetrics));
    if (stage_only(*metric) && prefix == "totals") {
      throw GateError(fmt::format("{}: \"{}\" is a figure of stages only (their rise above their start, what they "
                                  "held at their end); the totals have peak_heap, peak_rss and leaked",
                                  source, field));
    }
    const double limit = *metric == Metric::kFragmentation ? parse_ratio_value(value, source, field)
                                                           : parse_size_value(value, source, field);
    limits.push_back(Limit{*metric, limit});
  }
  return limits;
}

using files::Figure;
using files::ReportFigures;
using files::ScopeFigures;

Figure figure_of(Metric metric) {
  switch (metric) {
    case Metric::kPeakHeap: return Figure::kPeakHeapBytes;
    case Metric::kPeakRss: return Figure::kPeakRssBytes;
    case Metric::kLeaked: return Figure::kLeakedBytes;
    case Metric::kFragmentation: return Figure::kFragmentationRatio;
    case Metric::kPeakDevice: return Figure::kPeakDeviceBytes;
    case Metric::kPeakHeapIncrease: return Figure::kPeakHeapIncreaseBytes;
    case Metric::kPeakRssIncrease: return Figure::kPeakRssIncreaseBytes;
    case Metric::kRetained: return Figure::kRetainedBytes;
  }
  return Figure::kPeakHeapBytes;
}

// A scope's figure for a check: nullopt when the report did not measure it.
std::optional<double> metric_value(const ScopeFigures& figures, Metric metric) { return figures[figure_of(metric)]; }

// The stage path a budget key stands for: the key itself when some stage has that path,
// else the one path whose last name is the key. Nothing when no stage matches.
std::optional<std::string> resolve_stage_key(const ReportFigures& report, const std::string& key) {
  if (report.stage(key)) return key;
  const auto named = report.paths_by_name.find(key);
  if (named == report.paths_by_name.end()) return std::nullopt;
  const std::vector<std::string>& paths = named->second;
  if (paths.size() > 1) {
    std::string list;
    for (const auto& p : paths) list += (list.empty() ? "" : ", ") + p;
    throw GateError(fmt::format("budget stage \"{}\" is ambiguous: stages of that name have paths {}; key the budget by path",
                                key, list));
  }
  return paths.front();
}

// "stats mode", or "this report" when it does not say its mode.
std::string mode_text(const ReportFigures& report) {
  return report.mode.empty() ? std::string("this report") : report.mode + " mode";
}

ReportFigures figures_of(const Json& report, const std::string& source) {
  try {
    return files::read_figures(report, source);
  } catch (const files::ReportFileError& e) {
    throw GateError(e.what());
  }
}

std::string describe_scope(const std::string& stage_path) {
  return stage_path.empty() ? std::string("the whole run") : fmt::format("stage {}", stage_path);
}

Check unmeasured_check(Check check, const std::string& scope_path, const std::string& where) {
  check.unmeasured = true;
  check.passed = false;
  check.measured_text = "not measured";
  check.message = fmt::format("{} of {} was not measured in {}, so its limit of {} cannot hold", metric_key(check.metric),
                              describe_scope(scope_path), where, check.limit_text);
  return check;
}

Check budget_check(const std::string& id, const std::string& scope_path, const Limit& limit, const ScopeFigures* figures,
                   const ReportFigures& report) {
  Check check;
  check.id = id;
  check.metric = limit.metric;
  check.limit = limit.value;
  check.limit_text = format_value(limit.metric, limit.value);
  if (!figures) {
    check.missing = true;
    check.passed = false;
    check.measured_text = "stage not in report";
    check.message = fmt::format("{}: the report has no stage with this path or name, so its {} limit of {} cannot hold",
                                id, metric_key(limit.metric), check.limit_text);
    return check;
  }
  const std::optional<double> measured = metric_value(*figures, limit.metric);
  if (!measured) return unmeasured_check(std::move(check), scope_path, mode_text(report));
  check.measured = *measured;
  check.measured_text = format_value(limit.metric, check.measured);
  check.passed = check.measured <= check.limit;
  if (!check.passed) {
    check.message = fmt::format("{} of {} is {}, over the budget of {}", metric_key(limit.metric),
                                describe_scope(scope_path), check.measured_text, check.limit_text);
  }
  return check;
}

Check growth_check(const std::string& id, const std::string& scope_path, Metric metric, std::optional<double> old_value,
                   std::optional<double> new_value, double max_growth, const std::string& old_mode,
                   const std::string& new_mode) {
  Check check;
  check.id = id;
  check.metric = metric;
  if (!old_value || !new_value) {
    check.limit_text = fmt::format("+{}", format_percent(max_growth));
    // Neither run measured it (two stats-mode runs' leaks): nothing to compare, and nothing passed.
    if (!old_value && !new_value) {
      check.skipped = true;
      check.measured_text = "not measured";
      return check;
    }
    return unmeasured_check(std::move(check), scope_path,
                            !new_value ? new_mode : fmt::format("the baseline ({})", old_mode));
  }
  check.limit = *old_value * (1 + max_growth);
  check.measured = *new_value;
  check.limit_text = fmt::format("+{} of {}", format_percent(max_growth), format_value(metric, *old_value));
  const std::string change = *old_value > 0  ? fmt::format("{:+.1f}%", (*new_value - *old_value) / *old_value * 100)
                             : *new_value > 0 ? std::string("from 0")
                                              : std::string("unchanged");
  check.measured_text = fmt::format("{} ({})", format_value(metric, *new_value), change);
  // Whole bytes: a figure equal to the limit is not failed by float error.
  check.passed = std::round(*new_value) <= std::floor(check.limit + 1e-6);
  if (!check.passed) {
    check.message = fmt::format("{} of {} grew from {} to {} ({}), more than the allowed +{}", metric_key(metric),
                                describe_scope(scope_path), format_value(metric, *old_value),
                                format_value(metric, *new_value), change, format_percent(max_growth));
  }
  return check;
}

// XML text and attribute values: HTML's escaping (valid XML), after the control
// characters XML 1.0 forbids even escaped (stage names are any bytes) become '?'.
std::string xml_escape(const std::string& text) {
  std::string allowed = text;
  for (char& c : allowed) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') c = '?';
  }
  return reports::html_escape(allowed);
}

// Workflow command escaping (actions/toolkit command.ts): data escapes %, CR, LF;
// property values also escape ':' and ','.
std::string github_escape_data(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string github_escape_property(const std::string& text) {
  std::string out;
  for (const char c : github_escape_data(text)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

}  // namespace

std::string_view metric_key(Metric metric) {
  switch (metric) {
    case Metric::kPeakHeap: return "peak_heap";
    case Metric::kPeakRss: return "peak_rss";
    case Metric::kPeakDevice: return "peak_device";
    case Metric::kLeaked: return "leaked";
    case Metric::kFragmentation: return "fragmentation";
    case Metric::kPeakHeapIncrease: return "peak_heap_increase";
    case Metric::kPeakRssIncrease: return "peak_rss_increase";
    case Metric::kRetained: return "retained";
  }
  return "?";
}

std::optional<double> parse_fraction(const std::string& text) {
  std::string s;
  for (const char c : text) {
    if (!isspace(static_cast<unsigned char>(c))) s += c;
  }
  if (s.empty()) return std::nullopt;
  const bool percent = s.back() == '%';
  if (percent) s.pop_back();
  if (s.empty() || !(isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return std::nullopt;
  char* end = nullptr;
  const double number = strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(number) || number < 0) return std::nullopt;
  return percent ? number / 100 : number;
}

double parse_max_growth(const std::string& text) {
  const std::optional<double> growth = parse_fraction(text);
  if (!growth) throw GateError(fmt::format("gate: --max-growth must be a fraction like 5% or 0.05, not '{}'", text));
  if (text.find('%') == std::string::npos && *growth > 1) {
    throw GateError(fmt::format("gate: --max-growth {} is ambiguous: write {}% for +{}%, or a fraction in 0..1", text,
                                text, text));
  }
  if (*growth > 10000) throw GateError(fmt::format("gate: --max-growth {} allows more than +1,000,000%: it gates nothing", text));
  return *growth;
}

// The budget's JSON, read with the path of the key being read kept, so that what the
// parser refuses inside a value (a number no double holds, like 1e400) and a key given
// twice (JSON keeps the last silently) are reported with the field they belong to.
BudgetJson parse_budget_json(const std::string& text, const std::string& source) {
  struct Open {
    std::set<std::string> keys;
    std::string current;  // the key whose value is being read; empty inside an array
  };
  std::vector<Open> open;
  const auto field = [&] {
    std::string path;
    for (const Open& o : open) {
      if (!o.current.empty()) path += (path.empty() ? "" : ".") + o.current;
    }
    return path;
  };
  const BudgetJson::parser_callback_t track = [&](int, BudgetJson::parse_event_t event, BudgetJson& parsed) {
    switch (event) {
      case BudgetJson::parse_event_t::object_start:
      case BudgetJson::parse_event_t::array_start: open.emplace_back(); break;
      case BudgetJson::parse_event_t::object_end:
      case BudgetJson::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case BudgetJson::parse_event_t::key: {
        Open& o = open.back();
        o.current = parsed.get<std::string>();
        if (!o.keys.insert(o.current).second) {
          throw GateError(fmt::format("{}: \"{}\" is given twice", source, field()));
        }
        break;
      }
      case BudgetJson::parse_event_t::value: break;
    }
    return true;
  };
  try {
    return BudgetJson::parse(text, track);
  } catch (const BudgetJson::parse_error& e) {
    throw GateError(fmt::format("{}: invalid JSON: {}", source, files::json_error_text(e)));
  } catch (const BudgetJson::exception& e) {
    // Out of range: the lexer read a number a double cannot hold.
    const std::string where = field();
    throw GateError(
        fmt::format("{}: {}{}", source, where.empty() ? "" : "\"" + where + "\": ", files::json_error_text(e)));
  }
}

Budget parse_budget(const std::string& text, const std::string& source) {
  const BudgetJson root = parse_budget_json(text, source);
  if (!root.is_object()) throw GateError(fmt::format("{}: a budget is a JSON object with \"totals\" and/or \"stages\"", source));
  Budget budget;
  for (const auto& [key, value] : root.items()) {
    if (key == "totals") {
      budget.totals = parse_limits(value, source, "totals");
    } else if (key == "stages") {
      if (!value.is_object()) {
        throw GateError(fmt::format("{}: \"stages\" must be an object keyed by stage path or name, not {}", source,
                                    value.type_name()));
      }
      for (const auto& [stage_key, limits] : value.items()) {
        if (stage_key.empty()) throw GateError(fmt::format("{}: \"stages\" has an empty stage key", source));
        budget.stages.push_back(StageBudget{stage_key, parse_limits(limits, source, "stages." + stage_key)});
      }
    } else if (key.starts_with("$") || key.starts_with("_")) {
      // "$schema", "_comment": room for editors' hints and notes without tripping the typo check.
    } else {
      throw GateError(fmt::format("{}: unknown field \"{}\" (expected totals, stages)", source, key));
    }
  }
  return budget;
}

Budget load_budget(const std::string& path) {
  try {
    return parse_budget(files::read_input_file(path, "budget", files::kMaxSmallInputBytes), path);
  } catch (const files::InputError& e) {
    throw GateError(e.what());
  }
}

std::vector<Check> check_budget(const Json& report_json, const Budget& budget, const std::string& source) {
  const ReportFigures report = figures_of(report_json, source);
  std::vector<Check> checks;
  for (const Limit& limit : budget.totals) {
    checks.push_back(budget_check(fmt::format("totals.{}", metric_key(limit.metric)), "", limit, &report.totals, report));
  }
  for (const StageBudget& stage : budget.stages) {
    const auto path = resolve_stage_key(report, stage.key);
    const ScopeFigures* figures = path ? report.stage(*path) : nullptr;
    for (const Limit& limit : stage.limits) {
      checks.push_back(budget_check(fmt::format("stages.{}.{}", stage.key, metric_key(limit.metric)),
                                    path.value_or(stage.key), limit, figures, report));
      checks.back().stage = stage.key;
    }
  }
  return checks;
}

std::vector<Check> check_baseline(const Json& report_json, const Json& baseline_json, double max_growth,
                                  const std::string& source, const std::string& baseline_source) {
  const ReportFigures report = figures_of(report_json, source);
  const ReportFigures baseline = figures_of(baseline_json, baseline_source);
  std::vector<Check> checks;
  const auto compare_scope = [&](const std::string& id_prefix, const std::string& path, const ScopeFigures& old_figures,
                                 const ScopeFigures& new_figures) {
    for (Metric m : kGrowthMetrics) {
      const std::string id = fmt::format("{}.{}", id_prefix, metric_key(m));
      checks.push_back(growth_check(id, path, m, metric_value(old_figures, m), metric_value(new_figures, m), max_growth,
                                    mode_text(baseline), mode_text(report)));
    }
  };
  compare_scope("baseline.totals", "", baseline.totals, report.totals);
  // Stage paths in the new report's order; those the baseline lacks are new stages with
  // nothing to grow from.
  for (const std::string& path : report.stage_paths) {
    if (const ScopeFigures* old_figures = baseline.stage(path)) {
      compare_scope("baseline.stages." + path, path, *old_figures, *report.stage(path));
    }
  }
  return checks;
}

int exit_code(const std::vector<Check>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const Check& c) { return c.passed; }) ? 0 : 1;
}

std::string verdict_text(const Check& c) {
  if (c.skipped) return "skipped";
  if (c.passed) return "ok";
  return c.missing ? "MISSING" : c.unmeasured ? "NOT MEASURED" : "OVER";
}

std::string render_table(const std::vector<Check>& checks) {
  const std::vector<std::string> header = {"check", "limit", "measured", "verdict"};
  std::vector<std::vector<std::string>> rows;
  for (const Check& c : checks) {
    rows.push_back({c.id, c.limit_text, c.measured_text, verdict_text(c)});
  }
  size_t widths[4];
  for (size_t col = 0; col < 4; ++col) {
    widths[col] = header[col].size();
    for (const auto& row : rows) widths[col] = std::max(widths[col], row[col].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    // Sizes are right-aligned so that their magnitudes line up.
    out += fmt::format("{:<{}}  {:>{}}  {:>{}}  {}\n", cells[0], widths[0], cells[1], widths[1], cells[2], widths[2],
                       cells[3]);
  };
  line(header);
  for (const auto& row : rows) line(row);
  const auto failed = std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.passed; });
  const auto skipped = std::count_if(checks.begin(), checks.end(), [](const Check& c) { return c.skipped; });
  out += fmt::format("memstage gate: {} check{}, {} failed{}: {}\n", checks.size(), checks.size() == 1 ? "" : "s", failed,
                     skipped ? fmt::format(", {} not measured by either report", skipped) : "", failed ? "FAIL" : "pass");
  return out;
}

std::string render_junit(const std::vector<Check>& checks, const std::string& suite_name) {
  const auto failed = std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.passed; });
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"0\">\n", xml_escape(suite_name),
                     checks.size(), failed);
  const auto skipped = std::count_if(checks.begin(), checks.end(), [](const Check& c) { return c.skipped; });
  out += fmt::format("  <testsuite name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"0\" skipped=\"{3}\">\n",
                     xml_escape(suite_name), checks.size(), failed, skipped);
  for (const Check& c : checks) {
    const std::string classname = c.id.starts_with("baseline.") ? "memstage.gate.baseline" : "memstage.gate.budget";
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", classname, xml_escape(c.id));
    if (c.skipped) {
      out += ">\n      <skipped message=\"not measured by either report\"/>\n    </testcase>\n";
      continue;
    }
    if (c.passed) {
      out += "/>\n";
      continue;
    }
    out += fmt::format(">\n      <failure message=\"{}\" type=\"{}\">limit: {}\nmeasured: {}</failure>\n    </testcase>\n",
                       xml_escape(c.message), c.missing ? "missing" : c.unmeasured ? "unmeasured" : "over",
                       xml_escape(c.limit_text), xml_escape(c.measured_text));
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

namespace {

std::string verdict_word(const Check& c) {
  if (c.skipped) return "skipped";
  if (c.passed) return "ok";
  return c.missing ? "missing" : c.unmeasured ? "unmeasured" : "over";
}

}  // namespace

std::string render_json(const std::vector<Check>& checks) {
  Json list = Json::array();
  for (const Check& c : checks) {
    const bool has_measure = !c.missing && !c.unmeasured && !c.skipped;
    list.push_back({{"id", c.id},
                    {"stage", c.stage.empty() ? Json(nullptr) : Json(c.stage)},
                    {"metric", metric_key(c.metric)},
                    {"verdict", verdict_word(c)},
                    {"limit", c.limit},
                    {"measured", has_measure ? Json(c.measured) : Json(nullptr)},
                    {"limit_text", c.limit_text},
                    {"measured_text", c.measured_text},
                    {"message", c.message}});
  }
  const auto failed = std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.passed; });
  return Json{{"checks", std::move(list)}, {"failed", failed}}.dump(1) + "\n";
}

std::string render_github(const std::vector<Check>& checks, const std::string& report_path) {
  std::string out;
  for (const Check& c : checks) {
    if (c.passed) continue;
    const std::string title = fmt::format("memstage gate {}", c.id);
    const std::string message = report_path.empty() ? c.message : fmt::format("{} ({})", c.message, report_path);
    out += fmt::format("::error title={}::{}\n", github_escape_property(title), github_escape_data(message));
  }
  return out;
}

int run_gate(const std::string& report_path, const GateOptions& options) {
  if (options.budget_path.empty() && options.baseline_path.empty()) {
    throw GateError("gate: nothing to check against: give --budget FILE and/or --baseline OLD_REPORT --max-growth PCT");
  }
  if (!options.baseline_path.empty() && !options.max_growth) {
    throw GateError("gate: --baseline needs --max-growth (e.g. 5%)");
  }
  if (options.baseline_path.empty() && options.max_growth) throw GateError("gate: --max-growth needs --baseline");
  // The budget first: a typo in it is the user's to fix whatever the report says.
  const std::optional<Budget> budget =
      options.budget_path.empty() ? std::nullopt : std::optional<Budget>(load_budget(options.budget_path));
  const auto read_report = [](const std::string& path) {
    try {
      return files::read_report_json(path);
    } catch (const files::ReportFileError& e) {
      throw GateError(e.what());
    }
  };
  const Json report = read_report(report_path);
  std::vector<Check> checks;
  if (budget) checks = check_budget(report, *budget, report_path);
  if (!options.baseline_path.empty()) {
    const Json baseline = read_report(options.baseline_path);
    for (Check& c : check_baseline(report, baseline, *options.max_growth, report_path, options.baseline_path)) {
      checks.push_back(std::move(c));
    }
  }
  // What the report says of itself (a damaged trace, a killed process) goes with the verdict.
  for (const std::string& warning : figures_of(report, report_path).warnings) {
    fprintf(options.table_out, "memstage gate: the report warns: %s\n", reports::terminal_text(warning).c_str());
  }
  // Check ids hold stage paths, named by the traced program.
  fputs(reports::terminal_lines(render_table(checks)).c_str(), options.table_out);
  if (options.github) {
    // Workflow commands are read from stdout.
    fputs(render_github(checks, report_path).c_str(), stdout);
  }
  fflush(stdout);
  if (!options.junit_path.empty()) {
    try {
      files::write_named_output_file(options.junit_path, render_junit(checks, "memstage gate"));
    } catch (const files::OutputError& e) {
      throw GateError(fmt::format("JUnit file: {}", e.what()));
    }
  }
  if (!options.json_path.empty()) {
    try {
      files::write_named_output_file(options.json_path, render_json(checks));
    } catch (const files::OutputError& e) {
      throw GateError(fmt::format("JSON file: {}", e.what()));
    }
  }
  return exit_code(checks);
}

}  // namespace memstage::gate
