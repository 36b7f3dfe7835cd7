#include "harness/compare/diff_model.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "harness/compare/compare_render.h"
#include "harness/compare/format.h"

namespace memstage::compare {

namespace {

using Json = nlohmann::json;

struct MetricSpec {
  const char* name;
  Unit unit;
  bool additive;  // summed over repeats of a path; else the maximum (or the last, for ratios)
  bool device = false;  // only when one of the two runs used device memory
};

// Order of the columns in every rendering.
const MetricSpec kMetrics[] = {
    {"duration_s", Unit::kSeconds, true},       {"peak_heap_bytes", Unit::kBytes, false},
    {"peak_rss_bytes", Unit::kBytes, false},    {"leaked_bytes", Unit::kBytes, true},
    {"allocations", Unit::kCount, true},        {"bytes_allocated", Unit::kBytes, true},
    {"fragmentation", Unit::kRatio, false},     {"allocator_resident_bytes", Unit::kBytes, false},
    {"peak_device_bytes", Unit::kBytes, false, true},
};

// A report whose run used device memory (CUDA): its totals' device peak is a number.
bool used_device(const Json& report) {
  return report.contains("totals") && report["totals"].is_object() && report["totals"].contains("peak_device_bytes") &&
         report["totals"]["peak_device_bytes"].is_number();
}

double number(const Json& j, const char* key) {
  if (!j.is_object()) return 0;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

std::map<std::string, double> figures(const Json& f, bool is_totals, const Json& report) {
  std::map<std::string, double> out;
  for (const MetricSpec& m : kMetrics) out[m.name] = number(f, m.name);
  // A row grouping several instances of its path (stage_grouping) says how long they were open.
  out["duration_s"] = is_totals         ? number(report, "duration_s")
                      : f.contains("open_s") ? number(f, "open_s")
                                             : std::max(0.0, number(f, "end_s") - number(f, "start_s"));
  out["fragmentation"] = f.contains("fragmentation") ? number(f["fragmentation"], "ratio") : 0;
  out["allocator_resident_bytes"] = f.contains("rss_breakdown") ? number(f["rss_breakdown"], "allocator_resident_bytes") : 0;
  return out;
}

// Stage path → merged figures, and the order paths first appear in.
std::map<std::string, std::map<std::string, double>> stage_figures(const Json& report, std::vector<std::string>& order) {
  std::map<std::string, std::map<std::string, double>> by_path;
  if (!report.contains("stages") || !report["stages"].is_array()) return by_path;
  for (const Json& st : report["stages"]) {
    const std::string path = st.value("path", st.value("name", std::string("?")));
    auto f = figures(st, false, report);
    auto [it, fresh] = by_path.try_emplace(path, f);
    if (fresh) {
      order.push_back(path);
      continue;
    }
    for (const MetricSpec& m : kMetrics) {
      double& have = it->second[m.name];
      const double now = f[m.name];
      have = m.additive ? have + now : m.unit == Unit::kRatio ? now : std::max(have, now);
    }
  }
  return by_path;
}

DiffRow make_row(const std::string& path, const std::map<std::string, double>* a,
                 const std::map<std::string, double>* b, bool device) {
  DiffRow row;
  row.path = path;
  row.in_a = a != nullptr;
  row.in_b = b != nullptr;
  for (const MetricSpec& spec : kMetrics) {
    if (spec.device && !device) continue;
    MetricDelta m;
    m.name = spec.name;
    m.unit = spec.unit;
    if (a) m.a = a->at(spec.name);
    if (b) m.b = b->at(spec.name);
    if (m.a && m.b) {
      m.delta = *m.b - *m.a;
      if (*m.a != 0) m.percent = 100.0 * *m.delta / *m.a;
    }
    row.metrics.push_back(m);
  }
  return row;
}

std::string value_text(Unit unit, double v) {
  char buf[32];
  switch (unit) {
    case Unit::kBytes: return format_bytes(v);
    case Unit::kSeconds: return format_seconds(v);
    case Unit::kCount: snprintf(buf, sizeof(buf), "%.0f", v); return buf;
    case Unit::kRatio: snprintf(buf, sizeof(buf), "%.1f%%", v * 100); return buf;
  }
  return "";
}

std::string delta_text(const MetricDelta& m) {
  if (!m.delta) return "–";
  char buf[32];
  switch (m.unit) {
    case Unit::kBytes: return format_signed_bytes(*m.delta);
    case Unit::kSeconds: return (*m.delta >= 0 ? "+" : "") + format_seconds(*m.delta);
    case Unit::kCount: snprintf(buf, sizeof(buf), "%+.0f", *m.delta); return buf;
    // A ratio's change is in percentage points: "+5.0 pp", never a percent of a percent.
    case Unit::kRatio: snprintf(buf, sizeof(buf), "%+.1f pp", *m.delta * 100); return buf;
  }
  return "";
}

std::string row_title(const DiffRow& r) {
  std::string title = r.path.empty() ? "total" : "stage " + r.path;
  if (!r.in_a) title += " (only in B)";
  if (!r.in_b) title += " (only in A)";
  return title;
}

}  // namespace

DiffResult build_diff(const Json& a, const Json& b, const std::string& a_label, const std::string& b_label) {
  DiffResult diff;
  diff.a_label = a_label;
  diff.b_label = b_label;
  diff.a_allocator = a.value("allocator", std::string());
  diff.b_allocator = b.value("allocator", std::string());
  const Json empty = Json::object();
  const auto ta = figures(a.contains("totals") ? a["totals"] : empty, true, a);
  const auto tb = figures(b.contains("totals") ? b["totals"] : empty, true, b);
  const bool device = used_device(a) || used_device(b);
  diff.rows.push_back(make_row("", &ta, &tb, device));
  std::vector<std::string> order_a, order_b;
  const auto sa = stage_figures(a, order_a);
  const auto sb = stage_figures(b, order_b);
  for (const std::string& p : order_a) {
    const auto ib = sb.find(p);
    diff.rows.push_back(make_row(p, &sa.at(p), ib == sb.end() ? nullptr : &ib->second, device));
  }
  for (const std::string& p : order_b) {
    if (!sa.contains(p)) diff.rows.push_back(make_row(p, nullptr, &sb.at(p), device));
  }
  return diff;
}

std::string render_diff_text(const DiffResult& diff) {
  std::ostringstream out;
  out << "A: " << diff.a_label << (diff.a_allocator.empty() ? "" : " (" + diff.a_allocator + ")") << "\n";
  out << "B: " << diff.b_label << (diff.b_allocator.empty() ? "" : " (" + diff.b_allocator + ")") << "\n";
  for (const DiffRow& r : diff.rows) {
    out << "\n" << row_title(r) << "\n";
    out << "  " << pad_right("", 26) << pad_left("A", 12) << pad_left("B", 12) << pad_left("delta", 13)
        << pad_left("%", 10) << "\n";
    for (const MetricDelta& m : r.metrics) {
      out << "  " << pad_right(m.name, 26) << pad_left(m.a ? value_text(m.unit, *m.a) : "–", 12)
          << pad_left(m.b ? value_text(m.unit, *m.b) : "–", 12) << pad_left(delta_text(m), 13)
          << pad_left(m.unit == Unit::kRatio || !m.delta ? "" : format_percent(m.percent), 10) << "\n";
    }
  }
  return out.str();
}

std::string render_diff_html(const DiffResult& diff) {
  std::ostringstream out;
  out << reports::html_page_start("memstage diff", ".up{color:#b00020}.down{color:#007a3d}");
  out << "<p>A: <code>" << html_escape(diff.a_label) << "</code> " << html_escape(diff.a_allocator) << "<br>B: <code>"
      << html_escape(diff.b_label) << "</code> " << html_escape(diff.b_allocator)
      << "</p>\n<p>Delta is B − A; percent of A. Red: B uses more.</p>\n";
  // Peak heap per row, A beside B.
  std::vector<std::string> labels;
  BarSeries sa{"A", {}, {}, {}}, sb{"B", {}, {}, {}};
  for (const DiffRow& r : diff.rows) {
    labels.push_back(r.path.empty() ? "total" : r.path);
    sa.values.push_back(r.metrics[1].a.value_or(0));
    sb.values.push_back(r.metrics[1].b.value_or(0));
  }
  out << svg_bar_chart("Peak heap", labels, {sa, sb}, [](double v) { return format_bytes(v); }) << "\n";
  out << "<table><tr><th>figure</th><th>A</th><th>B</th><th>delta</th><th>%</th></tr>\n";
  for (const DiffRow& r : diff.rows) {
    out << "<tr class='group'><td colspan='5'>" << html_escape(row_title(r)) << "</td></tr>\n";
    for (const MetricDelta& m : r.metrics) {
      const char* cls = !m.delta || *m.delta == 0 ? "" : *m.delta > 0 ? " class='up'" : " class='down'";
      out << "<tr><td>" << html_escape(m.name) << "</td><td>" << (m.a ? value_text(m.unit, *m.a) : "–") << "</td><td>"
          << (m.b ? value_text(m.unit, *m.b) : "–") << "</td><td" << cls << ">" << html_escape(delta_text(m))
          << "</td><td" << cls << ">" << (m.unit == Unit::kRatio || !m.delta ? "" : format_percent(m.percent))
          << "</td></tr>\n";
    }
  }
  out << "</table>\n" << reports::html_page_end();
  return out.str();
}

nlohmann::ordered_json diff_to_json(const DiffResult& diff) {
  using OJ = nlohmann::ordered_json;
  OJ j;
  j["schema"] = kDiffSchema;
  j["a"] = {{"label", diff.a_label}, {"allocator", diff.a_allocator}};
  j["b"] = {{"label", diff.b_label}, {"allocator", diff.b_allocator}};
  OJ rows = OJ::array();
  for (const DiffRow& r : diff.rows) {
    OJ rj;
    rj["path"] = r.path.empty() ? OJ(nullptr) : OJ(r.path);
    rj["in_a"] = r.in_a;
    rj["in_b"] = r.in_b;
    OJ metrics = OJ::object();
    for (const MetricDelta& m : r.metrics) {
      auto opt = [](const std::optional<double>& v) { return v ? OJ(*v) : OJ(nullptr); };
      metrics[m.name] = {{"a", opt(m.a)}, {"b", opt(m.b)}, {"delta", opt(m.delta)}, {"percent", opt(m.percent)}};
    }
    rj["metrics"] = std::move(metrics);
    rows.push_back(std::move(rj));
  }
  j["rows"] = std::move(rows);
  return j;
}

}  // namespace memstage::compare
