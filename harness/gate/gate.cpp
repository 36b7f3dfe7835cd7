#include "harness/gate/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/cli/sizes.h"
#include "harness/files/output_files.h"
#include "harness/files/report_json.h"
#include "reports/render/html/html_page.h"
#include "reports/render/text/human_units.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::gate {

using Json = nlohmann::json;
// Budgets keep the file's key order, so checks are listed as the user wrote them.
using BudgetJson = nlohmann::ordered_json;

namespace {

constexpr Metric kAllMetrics[] = {Metric::kPeakHeap, Metric::kPeakRss, Metric::kLeaked, Metric::kFragmentation,
                                  Metric::kPeakDevice};
// Growth is about sizes; a fragmentation ratio moves with the allocator, not the program.
constexpr Metric kGrowthMetrics[] = {Metric::kPeakHeap, Metric::kPeakRss, Metric::kLeaked};
constexpr const char* kExpectedMetrics = "peak_heap, peak_rss, leaked, fragmentation, peak_device";

std::string read_whole_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw GateError(fmt::format("cannot read {} {}", what, path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// nlohmann's message less its "[json.exception.parse_error.101] " prefix: what remains
// says where ("parse error at line 3, column 5: ...").
std::string parse_error_text(const Json::exception& e) {
  std::string message = e.what();
  if (const auto close = message.find("] "); message.starts_with("[json.exception") && close != std::string::npos) {
    message = message.substr(close + 2);
  }
  return message;
}

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
  return reports::format_bytes(static_cast<uint64_t>(std::llround(std::max(0.0, value))));
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
    const double limit = *metric == Metric::kFragmentation ? parse_ratio_value(value, source, field)
                                                           : parse_size_value(value, source, field);
    limits.push_back(Limit{*metric, limit});
  }
  return limits;
}

double number_field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : 0.0;
}

// One scope's figures (the totals, or every occurrence of one stage path taken together).
struct Figures {
  double peak_heap_bytes = 0;
  double peak_rss_bytes = 0;
  double peak_device_bytes = 0;  // 0 when the run used no device memory
  double leaked_bytes = 0;
  double fragmentation_ratio = 0;
  int occurrences = 0;

  double get(Metric metric) const {
    switch (metric) {
      case Metric::kPeakHeap: return peak_heap_bytes;
      case Metric::kPeakRss: return peak_rss_bytes;
      case Metric::kPeakDevice: return peak_device_bytes;
      case Metric::kLeaked: return leaked_bytes;
      case Metric::kFragmentation: return fragmentation_ratio;
    }
    return 0;
  }
  // Worst occurrence: peaks and fragmentation are highs, leaks add up.
  void add(const Json& scope) {
    peak_heap_bytes = std::max(peak_heap_bytes, number_field(scope, "peak_heap_bytes"));
    peak_rss_bytes = std::max(peak_rss_bytes, number_field(scope, "peak_rss_bytes"));
    peak_device_bytes = std::max(peak_device_bytes, number_field(scope, "peak_device_bytes"));
    leaked_bytes += number_field(scope, "leaked_bytes");
    if (const auto f = scope.find("fragmentation"); f != scope.end() && f->is_object()) {
      fragmentation_ratio = std::max(fragmentation_ratio, number_field(*f, "ratio"));
    }
    ++occurrences;
  }
};

const Json& stages_of(const Json& report) {
  static const Json kEmpty = Json::array();
  const auto it = report.find("stages");
  return it != report.end() && it->is_array() ? *it : kEmpty;
}

std::string string_field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Figures totals_of(const Json& report) {
  Figures figures;
  if (const auto it = report.find("totals"); it != report.end() && it->is_object()) figures.add(*it);
  return figures;
}

Figures stage_path_figures(const Json& report, const std::string& path) {
  Figures figures;
  for (const Json& stage : stages_of(report)) {
    if (string_field(stage, "path") == path) figures.add(stage);
  }
  return figures;
}

// The stage path a budget key stands for: the key itself when some stage has that path,
// else the one path whose last name is the key. Nothing when no stage matches.
std::optional<std::string> resolve_stage_key(const Json& report, const std::string& key) {
  std::vector<std::string> paths_with_name;
  for (const Json& stage : stages_of(report)) {
    const std::string path = string_field(stage, "path");
    if (path == key) return path;
    if (string_field(stage, "name") == key &&
        std::find(paths_with_name.begin(), paths_with_name.end(), path) == paths_with_name.end()) {
      paths_with_name.push_back(path);
    }
  }
  if (paths_with_name.empty()) return std::nullopt;
  if (paths_with_name.size() > 1) {
    std::string list;
    for (const auto& p : paths_with_name) list += (list.empty() ? "" : ", ") + p;
    throw GateError(fmt::format("budget stage \"{}\" is ambiguous: stages of that name have paths {}; key the budget by path",
                                key, list));
  }
  return paths_with_name.front();
}

std::string describe_scope(const std::string& stage_path) {
  return stage_path.empty() ? std::string("the whole run") : fmt::format("stage {}", stage_path);
}

Check budget_check(const std::string& id, const std::string& scope_path, const Limit& limit, const Figures* figures) {
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
  check.measured = figures->get(limit.metric);
  check.measured_text = format_value(limit.metric, check.measured);
  check.passed = check.measured <= check.limit;
  if (!check.passed) {
    check.message = fmt::format("{} of {} is {}, over the budget of {}", metric_key(limit.metric),
                                describe_scope(scope_path), check.measured_text, check.limit_text);
  }
  return check;
}

Check growth_check(const std::string& id, const std::string& scope_path, Metric metric, double old_value,
                   double new_value, double max_growth) {
  Check check;
  check.id = id;
  check.metric = metric;
  check.limit = old_value * (1 + max_growth);
  check.measured = new_value;
  check.limit_text = fmt::format("+{} of {}", format_percent(max_growth), format_value(metric, old_value));
  const std::string change = old_value > 0    ? fmt::format("{:+.1f}%", (new_value - old_value) / old_value * 100)
                             : new_value > 0 ? std::string("from 0")
                                             : std::string("unchanged");
  check.measured_text = fmt::format("{} ({})", format_value(metric, new_value), change);
  // Rounded to whole bytes, so that a figure equal to the limit is not failed by float error.
  check.passed = std::llround(new_value) <= std::llround(std::floor(check.limit + 1e-6));
  if (!check.passed) {
    check.message = fmt::format("{} of {} grew from {} to {} ({}), more than the allowed +{}", metric_key(metric),
                                describe_scope(scope_path), format_value(metric, old_value),
                                format_value(metric, new_value), change, format_percent(max_growth));
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
    throw GateError(fmt::format("{}: invalid JSON: {}", source, parse_error_text(e)));
  } catch (const BudgetJson::exception& e) {
    // Out of range: the lexer read a number a double cannot hold.
    const std::string where = field();
    throw GateError(fmt::format("{}: {}{}", source, where.empty() ? "" : "\"" + where + "\": ", parse_error_text(e)));
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

Budget load_budget(const std::string& path) { return parse_budget(read_whole_file(path, "budget"), path); }

std::vector<Check> check_budget(const Json& report, const Budget& budget) {
  std::vector<Check> checks;
  const Figures totals = totals_of(report);
  for (const Limit& limit : budget.totals) {
    checks.push_back(budget_check(fmt::format("totals.{}", metric_key(limit.metric)), "", limit, &totals));
  }
  for (const StageBudget& stage : budget.stages) {
    const auto path = resolve_stage_key(report, stage.key);
    const Figures figures = path ? stage_path_figures(report, *path) : Figures{};
    for (const Limit& limit : stage.limits) {
      checks.push_back(budget_check(fmt::format("stages.{}.{}", stage.key, metric_key(limit.metric)),
                                    path.value_or(stage.key), limit, path ? &figures : nullptr));
    }
  }
  return checks;
}

std::vector<Check> check_baseline(const Json& report, const Json& baseline, double max_growth) {
  std::vector<Check> checks;
  const Figures new_totals = totals_of(report);
  const Figures old_totals = totals_of(baseline);
  for (Metric m : kGrowthMetrics) {
    checks.push_back(growth_check(fmt::format("baseline.totals.{}", metric_key(m)), "", m, old_totals.get(m),
                                  new_totals.get(m), max_growth));
  }
  // Stage paths in the new report's order, each once; those the baseline lacks are new
  // stages with nothing to grow from.
  std::vector<std::string> paths;
  for (const Json& stage : stages_of(report)) {
    const std::string path = string_field(stage, "path");
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  for (const std::string& path : paths) {
    const Figures old_figures = stage_path_figures(baseline, path);
    if (old_figures.occurrences == 0) continue;
    const Figures new_figures = stage_path_figures(report, path);
    for (Metric m : kGrowthMetrics) {
      checks.push_back(growth_check(fmt::format("baseline.stages.{}.{}", path, metric_key(m)), path, m,
                                    old_figures.get(m), new_figures.get(m), max_growth));
    }
  }
  return checks;
}

int exit_code(const std::vector<Check>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const Check& c) { return c.passed; }) ? 0 : 1;
}

std::string render_table(const std::vector<Check>& checks) {
  const std::vector<std::string> header = {"check", "limit", "measured", "verdict"};
  std::vector<std::vector<std::string>> rows;
  for (const Check& c : checks) {
    rows.push_back({c.id, c.limit_text, c.measured_text, c.passed ? "ok" : c.missing ? "MISSING" : "OVER"});
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
  out += fmt::format("memstage gate: {} check{}, {} failed: {}\n", checks.size(), checks.size() == 1 ? "" : "s",
                     failed, failed ? "FAIL" : "pass");
  return out;
}

std::string render_junit(const std::vector<Check>& checks, const std::string& suite_name) {
  const auto failed = std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.passed; });
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"0\">\n", xml_escape(suite_name),
                     checks.size(), failed);
  out += fmt::format("  <testsuite name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"0\" skipped=\"0\">\n",
                     xml_escape(suite_name), checks.size(), failed);
  for (const Check& c : checks) {
    const std::string classname = c.id.starts_with("baseline.") ? "memstage.gate.baseline" : "memstage.gate.budget";
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", classname, xml_escape(c.id));
    if (c.passed) {
      out += "/>\n";
      continue;
    }
    out += fmt::format(">\n      <failure message=\"{}\" type=\"{}\">limit: {}\nmeasured: {}</failure>\n    </testcase>\n",
                       xml_escape(c.message), c.missing ? "missing" : "over", xml_escape(c.limit_text),
                       xml_escape(c.measured_text));
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
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
  if (budget) checks = check_budget(report, *budget);
  if (!options.baseline_path.empty()) {
    const Json baseline = read_report(options.baseline_path);
    for (Check& c : check_baseline(report, baseline, *options.max_growth)) checks.push_back(std::move(c));
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
      files::write_output_file(options.junit_path, render_junit(checks, "memstage gate"));
    } catch (const files::OutputError& e) {
      throw GateError(fmt::format("JUnit file: {}", e.what()));
    }
  }
  return exit_code(checks);
}

}  // namespace memstage::gate
