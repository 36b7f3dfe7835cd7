#include "harness/compare/compare_render.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "harness/compare/format.h"

namespace memstage::compare {

namespace {

// Colour-blind-safe palette (Okabe–Ito).
const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"};

std::string range_text(const Summary& s, std::string (*fmt)(double)) {
  if (s.count == 0) return "–";
  if (s.count == 1 || s.min == s.max) return fmt(s.median);
  return fmt(s.median) + " [" + fmt(s.min) + "–" + fmt(s.max) + "]";
}

std::string bytes_text(double v) { return format_bytes(v); }
std::string seconds_text(double v) { return format_seconds(v); }
std::string ratio_text(double v) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%.1f%%", v * 100);
  return buf;
}

std::string frag_text(const MemoryFigures& m) {
  return ratio_text(m.fragmentation_ratio) + (m.fragmentation_estimated ? " (est.)" : "");
}

struct Column {
  std::string header;
  size_t width;
};

}  // namespace

std::string render_compare_text(const CompareResult& result) {
  std::ostringstream out;
  size_t name_width = 22;  // a tuning's name ("jemalloc:dirty_decay_ms=0") widens the first column
  for (const SubjectResult& s : result.subjects) name_width = std::max(name_width, display_width(s.name) + 2);
  const std::vector<Column> cols = {{"", name_width},          {"wall time median [min–max]", 30}, {"peak heap", 11},
                                    {"peak RSS", 11},   {"fragmentation", 15},                {"leaked", 10}};
  auto header = [&] {
    for (size_t i = 0; i < cols.size(); ++i) out << (i ? pad_left(cols[i].header, cols[i].width) : pad_right(cols[i].header, cols[i].width)) << (i + 1 < cols.size() ? "  " : "\n");
  };
  auto row = [&](const std::string& name, const RowFigures& r) {
    out << pad_right("  " + name, cols[0].width) << "  " << pad_left(range_text(r.wall_time_s, seconds_text), cols[1].width);
    if (r.memory) {
      out << "  " << pad_left(format_bytes(r.memory->peak_heap_bytes), cols[2].width) << "  "
          << pad_left(format_bytes(r.memory->peak_rss_bytes), cols[3].width) << "  "
          << pad_left(frag_text(*r.memory), cols[4].width) << "  " << pad_left(format_bytes(r.memory->leaked_bytes), cols[5].width);
    } else {
      out << "  " << pad_left("(no full run)", cols[2].width);
    }
    out << "\n";
  };
  header();
  out << "total\n";
  for (const SubjectResult& s : result.subjects) row(s.name, s.totals);
  for (const std::string& path : result.stage_paths) {
    out << "stage " << path << "\n";
    for (const SubjectResult& s : result.subjects) {
      if (const RowFigures* r = s.stage(path)) row(s.name, *r);
    }
  }
  out << "time: " << result.repeat << " stats-mode run(s) per subject, interleaved; memory: one full-mode run each.\n";
  for (const SubjectResult& s : result.subjects) {
    if (s.totals.memory && s.totals.memory->breakdown_estimated) {
      out << "note: " << s.name << " (" << (s.allocator.empty() ? "?" : s.allocator)
          << "): the allocator does not report some figures; its RSS breakdown is estimated.\n";
    }
  }
  for (const std::string& note : result.notes) out << "note: " << note << "\n";
  for (const RunRecord& r : result.runs) {
    if (!r.report) out << "failed: " << r.planned.dir_name << ": " << r.error << "\n";
  }
  return out.str();
}

std::string svg_bar_chart(const std::string& title, const std::vector<std::string>& row_labels,
                          const std::vector<BarSeries>& series, std::string (*format_value)(double)) {
  const int label_w = 150, chart_w = 260, value_w = 90, bar_h = 12, gap = 10;
  double max_value = 0;
  for (const BarSeries& s : series) {
    for (double v : s.values) max_value = std::max(max_value, v);
    for (double v : s.high) max_value = std::max(max_value, v);
  }
  if (max_value <= 0) max_value = 1;
  const int group_h = static_cast<int>(series.size()) * bar_h + gap;
  const int height = 28 + static_cast<int>(row_labels.size()) * group_h + 18 + 14 * static_cast<int>(series.size());
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' role='img' width='" << label_w + chart_w + value_w << "' height='"
      << height << "' font-size='11' font-family='sans-serif'><title>" << html_escape(title) << "</title>"
      << "<text x='0' y='14' font-weight='bold' font-size='13'>" << html_escape(title) << "</text>";
  int y = 28;
  for (size_t r = 0; r < row_labels.size(); ++r) {
    std::string label = row_labels[r];
    if (display_width(label) > 24) label = "…" + label.substr(label.size() - 22);
    svg << "<text x='0' y='" << y + group_h / 2 << "'>" << html_escape(label) << "</text>";
    for (size_t s = 0; s < series.size(); ++s) {
      const double v = r < series[s].values.size() ? series[s].values[r] : 0;
      const int w = static_cast<int>(v / max_value * chart_w);
      const int by = y + static_cast<int>(s) * bar_h;
      svg << "<rect x='" << label_w << "' y='" << by << "' width='" << std::max(w, v > 0 ? 1 : 0) << "' height='"
          << bar_h - 2 << "' fill='" << kColours[s % 8] << "'><title>" << html_escape(series[s].name) << ": "
          << html_escape(format_value(v)) << "</title></rect>";
      if (r < series[s].low.size() && r < series[s].high.size() && series[s].high[r] > series[s].low[r]) {
        const int x1 = label_w + static_cast<int>(series[s].low[r] / max_value * chart_w);
        const int x2 = label_w + static_cast<int>(series[s].high[r] / max_value * chart_w);
        const int cy = by + (bar_h - 2) / 2;
        svg << "<path d='M" << x1 << ' ' << cy << "H" << x2 << "M" << x1 << ' ' << cy - 3 << "v6M" << x2 << ' '
            << cy - 3 << "v6' stroke='#333' fill='none'/>";
      }
      svg << "<text x='" << label_w + chart_w + 4 << "' y='" << by + bar_h - 3 << "'>" << html_escape(format_value(v))
          << "</text>";
    }
    y += group_h;
  }
  y += 4;
  for (size_t s = 0; s < series.size(); ++s) {
    svg << "<rect x='0' y='" << y << "' width='10' height='10' fill='" << kColours[s % 8] << "'/><text x='14' y='"
        << y + 9 << "'>" << html_escape(series[s].name) << "</text>";
    y += 14;
  }
  svg << "</svg>";
  return svg.str();
}

namespace {

// compare.html's own additions to the house stylesheet (reports/render/html/html_page.h).
constexpr const char* kStyle =
    ".est{color:#a05a00}"
    ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(510px,1fr));gap:1em}"
    ".range{color:#666;font-size:90%}";

std::string cell_range(const Summary& s, std::string (*fmt)(double)) {
  if (s.count == 0) return "<td>–</td>";
  std::string text = html_escape(fmt(s.median));
  if (s.count > 1) text += " <span class='range'>" + html_escape(fmt(s.min) + "–" + fmt(s.max)) + "</span>";
  return "<td>" + text + "</td>";
}

std::string est(bool estimated, const std::string& text) {
  return estimated ? "<span class='est' title='estimated: the allocator does not report this'>≈" + text + "</span>"
                   : text;
}

void table_rows(std::ostringstream& out, const SubjectResult& s, const RowFigures& r) {
  out << "<tr><td>" << html_escape(s.name) << "</td>" << cell_range(r.wall_time_s, seconds_text);
  if (r.memory) {
    const MemoryFigures& m = *r.memory;
    out << "<td>" << format_bytes(m.peak_heap_bytes) << "</td><td>" << format_bytes(m.peak_rss_bytes) << "</td>"
        << cell_range(r.peak_rss_bytes, bytes_text) << "<td>" << est(m.fragmentation_estimated, ratio_text(m.fragmentation_ratio))
        << "</td><td>" << format_bytes(m.leaked_bytes) << "</td><td>" << format_bytes(m.live_bytes) << "</td><td>"
        << est(m.breakdown_estimated, format_bytes(m.allocator_in_use_bytes)) << "</td><td>"
        << est(m.breakdown_estimated, format_bytes(m.allocator_resident_bytes)) << "</td><td>"
        << format_bytes(m.rss_bytes) << "</td>";
  } else {
    out << "<td colspan='9'>no full-mode report</td>";
  }
  out << "</tr>\n";
}

// Each subject: its allocator, command and reports.
void subjects_table(std::ostringstream& out, const CompareResult& result) {
  out << "<table><tr><th>subject</th><th>allocator</th><th>command</th><th>reports</th></tr>\n";
  for (const SubjectResult& s : result.subjects) {
    std::string command;
    for (const auto& w : s.command) command += (command.empty() ? "" : " ") + w;
    out << "<tr><td>" << html_escape(s.name) << "</td><td>" << html_escape(s.allocator.empty() ? "?" : s.allocator)
        << (s.allocator_library.empty() ? "" : " <span class='range'>" + html_escape(s.allocator_library) + "</span>")
        << "</td><td><code>" << html_escape(command) << "</code></td><td>";
    if (!s.full_report.empty()) out << "<a href='" << html_escape(s.full_report) << "'>full</a>";
    for (size_t i = 0; i < s.stats_reports.size(); ++i) {
      out << " <a href='" << html_escape(s.stats_reports[i]) << "'>stats " << i + 1 << "</a>";
    }
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

// Charts: total then every stage, one bar per subject.
void charts(std::ostringstream& out, const CompareResult& result) {
  std::vector<std::string> labels = {"total"};
  for (const auto& p : result.stage_paths) labels.push_back(p);
  std::vector<BarSeries> time, heap, rss, frag;
  for (const SubjectResult& s : result.subjects) {
    BarSeries t{s.name, {}, {}, {}}, h{s.name, {}, {}, {}}, r{s.name, {}, {}, {}}, f{s.name, {}, {}, {}};
    auto add = [&](const RowFigures* row) {
      t.values.push_back(row ? row->wall_time_s.median : 0);
      t.low.push_back(row ? row->wall_time_s.min : 0);
      t.high.push_back(row ? row->wall_time_s.max : 0);
      const bool m = row && row->memory;
      h.values.push_back(m ? row->memory->peak_heap_bytes : 0);
      r.values.push_back(m ? row->memory->peak_rss_bytes : 0);
      f.values.push_back(m ? row->memory->fragmentation_ratio : 0);
    };
    add(&s.totals);
    for (const auto& p : result.stage_paths) add(s.stage(p));
    time.push_back(t);
    heap.push_back(h);
    rss.push_back(r);
    frag.push_back(f);
  }
  out << "<h2>Side by side</h2><div class='charts'>\n"
      << "<div>" << svg_bar_chart("Wall time (median, min–max)", labels, time, seconds_text) << "</div>\n"
      << "<div>" << svg_bar_chart("Peak heap", labels, heap, bytes_text) << "</div>\n"
      << "<div>" << svg_bar_chart("Peak RSS (full run)", labels, rss, bytes_text) << "</div>\n"
      << "<div>" << svg_bar_chart("Fragmentation (1 − live / allocator resident)", labels, frag, ratio_text)
      << "</div>\n</div>\n";
}

void figures_table(std::ostringstream& out, const CompareResult& result) {
  out << "<h2>Figures</h2>\n<table><tr><th>subject</th><th>wall time</th><th>peak heap</th><th>peak RSS</th>"
         "<th>peak RSS, stats runs</th><th>fragmentation</th><th>leaked</th><th>live</th><th>allocator in use</th>"
         "<th>allocator resident</th><th>RSS</th></tr>\n";
  out << "<tr class='group'><td colspan='11'>total</td></tr>\n";
  for (const SubjectResult& s : result.subjects) table_rows(out, s, s.totals);
  for (const auto& p : result.stage_paths) {
    out << "<tr class='group'><td colspan='11'>stage " << html_escape(p) << "</td></tr>\n";
    for (const SubjectResult& s : result.subjects) {
      if (const RowFigures* r = s.stage(p)) table_rows(out, s, *r);
    }
  }
  out << "</table>\n<p>Live, in use, resident and RSS are the breakdown at the peak of the run or stage "
         "(live → allocator in use → allocator resident → RSS); of a stage entered several times, each its "
         "highest.</p>\n";
}

void runs_table(std::ostringstream& out, const CompareResult& result) {
  out << "<h2>Runs, in execution order</h2>\n<table><tr><th>#</th><th>subject</th><th>mode</th><th>exit</th>"
         "<th>time</th><th>report</th></tr>\n";
  for (size_t i = 0; i < result.runs.size(); ++i) {
    const RunRecord& r = result.runs[i];
    const std::string name = r.planned.subject < result.subjects.size() ? result.subjects[r.planned.subject].name : "?";
    out << "<tr><td>" << i + 1 << "</td><td>" << html_escape(name) << "</td><td>" << mode_name(r.planned.mode)
        << "</td><td>" << r.exit_code << "</td><td>" << format_seconds(r.duration_s) << "</td><td>";
    if (r.report) {
      out << "<a href='" << html_escape(r.planned.dir_name + "/report.html") << "'>" << html_escape(r.planned.dir_name)
          << "</a>";
    } else {
      out << html_escape(r.error);
    }
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

}  // namespace

std::string render_compare_html(const CompareResult& result) {
  std::ostringstream out;
  out << reports::html_page_start("memstage compare", kStyle);
  out << "<p>" << result.subjects.size() << " subjects. Time: " << result.repeat
      << " stats-mode run(s) each (no stack unwinding), interleaved round-robin; median with min–max. "
         "Memory: one full-mode run each (every allocation traced). "
         "Allocator figures (in use, resident) come from each allocator's own statistics, read by the tracer at "
         "stage boundaries; <span class='est'>≈</span> marks a figure the allocator does not report and memstage "
         "estimated.</p>\n";
  for (const std::string& note : result.notes) out << "<p>" << html_escape(note) << "</p>\n";
  subjects_table(out, result);
  charts(out, result);
  figures_table(out, result);
  runs_table(out, result);
  out << reports::html_page_end();
  return out.str();
}

}  // namespace memstage::compare
