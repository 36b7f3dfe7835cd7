#include "harness/compare/diff_model.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "harness/compare/compare_render.h"
#include "harness/compare/format.h"
#include "harness/files/report_figures.h"

namespace memstage::compare {

namespace {

using Json = nlohmann::json;

using files::Figure;
using files::ReportFigures;
using files::ScopeFigures;

struct MetricSpec {
  Figure figure;
  Unit unit;
  bool device = false;  // only when one of the two runs used device memory
};

// Order of the columns in every rendering.
const MetricSpec kMetrics[] = {
    {Figure::kDurationS, Unit::kSeconds},      {Figure::kPeakHeapBytes, Unit::kBytes},
    {Figure::kPeakRssBytes, Unit::kBytes},     {Figure::kLeakedBytes, Unit::kBytes},
    {Figure::kAllocations, Unit::kCount},      {Figure::kBytesAllocated, Unit::kBytes},
    {Figure::kFragmentationRatio, Unit::kRatio}, {Figure::kAllocatorResidentBytes, Unit::kBytes},
    {Figure::kPeakDeviceBytes, Unit::kBytes, true},
};

// A figure only one side measured (leaks: full against stats mode) shows on that side, with no delta.
DiffRow make_row(const std::string& path, const ScopeFigures* a, const ScopeFigures* b, bool device) {
  DiffRow row;
  row.path = path;
  row.in_a = a != nullptr;
  row.in_b = b != nullptr;
  for (const MetricSpec& spec : kMetrics) {
    if (spec.device && !device) continue;
    MetricDelta m;
    m.name = files::figure_name(spec.figure);
    m.unit = spec.unit;
    if (a) m.a = (*a)[spec.figure];
    if (b) m.b = (*b)[spec.figure];
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

// " (glibc, full mode)": what a reader needs to know that two runs measured alike.
std::string run_details(const std::string& allocator, const std::string& mode) {
  std::string details = allocator;
  if (!mode.empty()) details += (details.empty() ? "" : ", ") + mode + " mode";
  return details.empty() ? "" : " (" + details + ")";
}

std::string modes_note() {
  return "The runs were recorded in different modes: a figure one of them did not measure shows as – on its side, "
         "with no delta.";
}

std::string row_title(const DiffRow& r) {
  std::string title = r.path.empty() ? "total" : "stage " + r.path;
  if (!r.in_a) title += " (only in B)";
  if (!r.in_b) title += " (only in A)";
  return title;
}

}  // namespace

DiffResult build_diff(const Json& a_json, const Json& b_json, const std::string& a_label, const std::string& b_label) {
  const ReportFigures a = files::read_figures(a_json, a_label);
  const ReportFigures b = files::read_figures(b_json, b_label);
  DiffResult diff;
  diff.a_label = a_label;
  diff.b_label = b_label;
  diff.a_allocator = a.allocator;
  diff.b_allocator = b.allocator;
  diff.a_mode = a.mode;
  diff.b_mode = b.mode;
  const bool device = a.used_device || b.used_device;
  diff.rows.push_back(make_row("", &a.totals, &b.totals, device));
  for (const std::string& p : a.stage_paths) diff.rows.push_back(make_row(p, a.stage(p), b.stage(p), device));
  for (const std::string& p : b.stage_paths) {
    if (!a.stage(p)) diff.rows.push_back(make_row(p, nullptr, b.stage(p), device));
  }
  return diff;
}

std::string render_diff_text(const DiffResult& diff) {
  std::ostringstream out;
  out << "A: " << diff.a_label << run_details(diff.a_allocator, diff.a_mode) << "\n";
  out << "B: " << diff.b_label << run_details(diff.b_allocator, diff.b_mode) << "\n";
  if (diff.a_mode != diff.b_mode) out << modes_note() << "\n";
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
  out << "<p>A: <code>" << html_escape(diff.a_label) << "</code>" << html_escape(run_details(diff.a_allocator, diff.a_mode))
      << "<br>B: <code>" << html_escape(diff.b_label) << "</code>" << html_escape(run_details(diff.b_allocator, diff.b_mode))
      << "</p>\n<p>Delta is B − A; percent of A. Red: B uses more.";
  if (diff.a_mode != diff.b_mode) out << " " << html_escape(modes_note());
  out << "</p>\n";
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
  j["a"] = {{"label", diff.a_label}, {"allocator", diff.a_allocator}, {"mode", diff.a_mode}};
  j["b"] = {{"label", diff.b_label}, {"allocator", diff.b_allocator}, {"mode", diff.b_mode}};
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
