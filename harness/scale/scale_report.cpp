#include "harness/scale/scale_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "reports/render/html/html_page.h"
#include "reports/render/text/human_units.h"

namespace memstage::scale {

using reports::format_bytes;
using reports::html_escape;

namespace {

using nlohmann::json;

std::string printf_string(const char* format, double value) {
  char buffer[64];
  snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string format_n(double n) { return printf_string("%.0f", n); }

bool matches(const std::vector<std::string>& names, const Series& s) {
  return std::find(names.begin(), names.end(), s.name) != names.end() ||
         std::find(names.begin(), names.end(), s.path) != names.end();
}

SeriesAnalysis analyze_series(const Series& series, const ScaleInput& input, bool declared_flat) {
  SeriesAnalysis a;
  a.series = series;
  a.declared_flat = declared_flat;
  a.heap = select_model(metric_points(series, Metric::kHeap));
  a.rss = select_model(metric_points(series, Metric::kRss));
  const Selection& chosen = a.of(input.metric);
  // One size says nothing about growth: no crossing rather than a constant's "never".
  const ModelScore* best_for_crossing = series.points.size() >= 2 ? chosen.best() : nullptr;
  if (const ModelScore* best = best_for_crossing) {
    a.crossing_n = crossing_n(best->fit, input.ram_bytes);
    // The spread of the answer: the same model refitted without each point.
    for (const Fit& refit : best->loo_fits) {
      const auto n = crossing_n(refit, input.ram_bytes);
      if (!n) {
        ++a.crossing_refits_never;
        continue;
      }
      if (!a.crossing_n_range) a.crossing_n_range = {*n, *n};
      a.crossing_n_range->first = std::min(a.crossing_n_range->first, *n);
      a.crossing_n_range->second = std::max(a.crossing_n_range->second, *n);
    }
  }
  const auto points = metric_points(series, input.metric);
  if (points.size() >= 2 && points.front().bytes > 0) {
    a.growth_fraction = (points.back().bytes - points.front().bytes) / points.front().bytes;
  }
  if (declared_flat && points.size() >= 2) {
    const ModelScore* best = chosen.best();
    const bool not_constant = best && best->fit.model != Model::kConstant;
    if (a.growth_fraction > 0.10 || (not_constant && a.growth_fraction > 0.01)) {
      a.flag = "declared flat but grows " + printf_string("%.1f", a.growth_fraction * 100) + "% from n=" +
               format_n(points.front().n) + " to n=" + format_n(points.back().n) + " (best model: " +
               (best ? model_name(best->fit.model) : "none") + ")";
    }
  }
  return a;
}

json number_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json fit_json(const Fit& fit) {
  json parameters = json::object();
  const auto names = parameter_names(fit.model);
  for (size_t i = 0; i < names.size() && i < fit.parameters.size(); ++i) parameters[names[i]] = fit.parameters[i];
  return {{"model", model_name(fit.model)}, {"parameters", parameters}, {"formula", fit.formula()}};
}

json selection_json(const Selection& selection, const SeriesAnalysis& a, const ScaleInput& input) {
  json out;
  out["criterion"] = selection.criterion;
  const ModelScore* best = selection.best();
  out["chosen"] = best ? fit_json(best->fit) : json(nullptr);
  json models = json::array();
  double largest_n = a.series.points.empty() ? 0 : a.series.points.back().n;
  for (const auto& s : selection.scores) {
    json m = fit_json(s.fit);
    m["loo_rms_bytes"] = number_or_null(s.loo_rms_bytes);
    m["residual_se_bytes"] = number_or_null(s.residual_se_bytes);
    m["crossing_n"] = number_or_null(crossing_n(s.fit, input.ram_bytes));
    m["chosen"] = best == &s;
    models.push_back(m);
  }
  out["models"] = models;
  if (best) {
    out["loo_rms_bytes"] = number_or_null(best->loo_rms_bytes);
    out["residual_se_bytes"] = number_or_null(best->residual_se_bytes);
    out["bytes_per_unit_at_largest_n"] = best->fit.slope(largest_n);
    json predictions = json::array();
    for (double factor : {2.0, 4.0, 10.0}) {
      predictions.push_back({{"n", largest_n * factor}, {"bytes", best->fit.evaluate(largest_n * factor)}});
    }
    out["predictions"] = predictions;
    out["crossing_n"] = number_or_null(crossing_n(best->fit, input.ram_bytes));
  }
  return out;
}

json series_json(const SeriesAnalysis& a, const ScaleInput& input) {
  json points = json::array();
  for (const auto& p : a.series.points) {
    points.push_back({{"n", p.n}, {"peak_heap_bytes", p.peak_heap_bytes}, {"peak_rss_bytes", p.peak_rss_bytes}});
  }
  json out = {{"name", a.series.name}, {"path", a.series.path}, {"points", points}};
  out["fits"] = {{"heap", selection_json(a.heap, a, input)}, {"rss", selection_json(a.rss, a, input)}};
  out["crossing_n"] = number_or_null(a.crossing_n);
  out["crossing_n_range"] =
      a.crossing_n_range ? json::array({a.crossing_n_range->first, a.crossing_n_range->second}) : json(nullptr);
  out["crossing_refits_never"] = a.crossing_refits_never;
  out["growth_fraction"] = a.growth_fraction;
  out["declared_flat"] = a.declared_flat;
  out["flag"] = a.flag ? json(*a.flag) : json(nullptr);
  return out;
}

// ---- text ----

std::string pad(std::string text, size_t width) {
  // Width in code points: the formulas hold "·" and "²".
  size_t shown = 0;
  for (unsigned char c : text) shown += (c & 0xC0) != 0x80;
  if (shown < width) text.append(width - shown, ' ');
  return text;
}

std::string crossing_text(const SeriesAnalysis& a) {
  if (a.series.points.size() < 2) return "- (needs 2 sizes)";
  if (!a.crossing_n) return "never";
  std::string out = format_n(*a.crossing_n);
  if (a.crossing_n_range) {
    out += " (" + format_n(a.crossing_n_range->first) + "–" + format_n(a.crossing_n_range->second);
    if (a.crossing_refits_never) out += ", some never";
    out += ")";
  }
  return out;
}

// ---- html ----

struct Curve {
  std::string css_class;
  std::vector<std::pair<double, double>> xy;
};

std::string svg_chart(const std::string& title, double x_max, double y_max, const std::vector<Curve>& curves,
                      const std::vector<Curve>& dots, std::optional<double> ram_bytes) {
  const double width = 640, height = 300, left = 80, right = 20, top = 30, bottom = 40;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  if (x_max <= 0) x_max = 1;
  if (y_max <= 0) y_max = 1;
  auto sx = [&](double x) { return left + plot_w * x / x_max; };
  auto sy = [&](double y) { return top + plot_h * (1 - std::clamp(y / y_max, -0.05, 1.05)); };
  std::string svg = "<svg viewBox=\"0 0 640 300\" width=\"640\" height=\"300\" role=\"img\">";
  svg += "<text x=\"" + std::to_string(int(left)) + "\" y=\"18\" class=\"title\">" + html_escape(title) + "</text>";
  svg += "<line class=\"axis\" x1=\"80\" y1=\"260\" x2=\"620\" y2=\"260\"/><line class=\"axis\" x1=\"80\" y1=\"30\" "
         "x2=\"80\" y2=\"260\"/>";
  for (int i = 0; i <= 4; ++i) {
    const double x = x_max * i / 4, y = y_max * i / 4;
    svg += "<text class=\"tick\" x=\"" + printf_string("%.1f", sx(x)) + "\" y=\"278\" text-anchor=\"middle\">" +
           format_n(x) + "</text>";
    svg += "<text class=\"tick\" x=\"74\" y=\"" + printf_string("%.1f", sy(y) + 4) + "\" text-anchor=\"end\">" +
           html_escape(format_bytes(y)) + "</text>";
  }
  svg += "<text class=\"tick\" x=\"350\" y=\"296\" text-anchor=\"middle\">n</text>";
  if (ram_bytes && *ram_bytes <= y_max * 1.05) {
    svg += "<line class=\"ram\" x1=\"80\" x2=\"620\" y1=\"" + printf_string("%.1f", sy(*ram_bytes)) + "\" y2=\"" +
           printf_string("%.1f", sy(*ram_bytes)) + "\"/><text class=\"tick\" x=\"616\" y=\"" +
           printf_string("%.1f", sy(*ram_bytes) - 4) + "\" text-anchor=\"end\">RAM " +
           html_escape(format_bytes(*ram_bytes)) + "</text>";
  }
  for (const auto& c : curves) {
    std::string d;
    for (const auto& [x, y] : c.xy) {
      d += (d.empty() ? "M" : "L") + printf_string("%.1f", sx(x)) + "," + printf_string("%.1f", sy(y));
    }
    svg += "<path class=\"" + c.css_class + "\" d=\"" + d + "\"/>";
  }
  for (const auto& c : dots) {
    for (const auto& [x, y] : c.xy) {
      svg += "<circle class=\"" + c.css_class + "\" r=\"4\" cx=\"" + printf_string("%.1f", sx(x)) + "\" cy=\"" +
             printf_string("%.1f", sy(y)) + "\"><title>n=" + format_n(x) + ": " + html_escape(format_bytes(y)) +
             "</title></circle>";
    }
  }
  return svg + "</svg>";
}

Curve sample(const Fit& fit, double x_max, const std::string& css_class) {
  Curve c{css_class, {}};
  for (int i = 1; i <= 200; ++i) {
    const double x = x_max * i / 200;
    c.xy.emplace_back(x, fit.evaluate(x));
  }
  return c;
}

std::string series_html(const SeriesAnalysis& a, const ScaleInput& input, bool extrapolate) {
  const double largest_n = a.series.points.empty() ? 1 : a.series.points.back().n;
  double x_max = largest_n * 1.15;
  // The totals chart reaches out to the crossing (at most 20× the sizes run) so that the
  // RAM line and the road to it are on the page.
  if (extrapolate && a.crossing_n) x_max = std::max(x_max, std::min(*a.crossing_n * 1.15, largest_n * 20));
  double y_max = 0;
  for (const auto& p : a.series.points) y_max = std::max({y_max, p.peak_heap_bytes, p.peak_rss_bytes});
  std::vector<Curve> curves, dots;
  for (Metric m : {Metric::kHeap, Metric::kRss}) {
    if (const ModelScore* best = a.of(m).best()) {
      curves.push_back(sample(best->fit, x_max, std::string("fit ") + metric_name(m)));
      if (extrapolate) y_max = std::max(y_max, std::min(best->fit.evaluate(x_max), input.ram_bytes * 1.1));
    }
    Curve d{std::string("dot ") + metric_name(m), {}};
    for (const auto& p : a.series.points) d.xy.emplace_back(p.n, m == Metric::kHeap ? p.peak_heap_bytes : p.peak_rss_bytes);
    dots.push_back(d);
  }
  if (extrapolate) y_max = std::max(y_max, std::min(input.ram_bytes * 1.1, y_max * 1e3));
  y_max *= 1.1;
  std::string out = "<section><h2>" + html_escape(a.series.path.empty() ? a.series.name : a.series.path) + "</h2>";
  out += svg_chart(a.series.name, x_max, y_max, curves, dots, input.ram_bytes);
  out += "<p>";
  for (Metric m : {Metric::kHeap, Metric::kRss}) {
    if (const ModelScore* best = a.of(m).best()) {
      out += "peak " + std::string(metric_name(m)) + ": <b>" + model_name(best->fit.model) + "</b> " +
             html_escape(best->fit.formula());
      if (best->loo_rms_bytes) out += " (leave-one-out error " + html_escape(format_bytes(*best->loo_rms_bytes)) + ")";
      out += "<br>";
    }
  }
  out += "reaches RAM at n = " + html_escape(crossing_text(a));
  if (a.flag) out += "<br><span class=\"flag\">" + html_escape(*a.flag) + "</span>";
  return out + "</p></section>";
}

}  // namespace

const char* metric_name(Metric metric) { return metric == Metric::kHeap ? "heap" : "rss"; }

namespace {

SeriesPoint point_of(double n, const files::ScopeFigures& figures) {
  return {n, figures[files::Figure::kPeakHeapBytes].value_or(0), figures[files::Figure::kPeakRssBytes].value_or(0)};
}

}  // namespace

void add_points(ScaleInput& input, double n, const files::ReportFigures& figures) {
  input.totals.points.push_back(point_of(n, figures.totals));
  for (const std::string& path : figures.stage_paths) {
    const files::ScopeFigures& stage = figures.stages.at(path);
    auto series = std::find_if(input.stages.begin(), input.stages.end(), [&](const Series& s) { return s.path == path; });
    if (series == input.stages.end()) series = input.stages.insert(input.stages.end(), {stage.name, path, {}});
    series->points.push_back(point_of(n, stage));
  }
}

std::vector<Point> metric_points(const Series& series, Metric metric) {
  std::vector<Point> out;
  for (const auto& p : series.points) out.push_back({p.n, metric == Metric::kHeap ? p.peak_heap_bytes : p.peak_rss_bytes});
  return out;
}

std::optional<double> predict(const std::vector<Point>& points, double n) {
  const Selection s = select_model(points);
  const ModelScore* best = s.best();
  if (!best || best->fit.point_count < 2) return std::nullopt;
  return best->fit.evaluate(n);
}

ScaleAnalysis analyze(const ScaleInput& input) {
  ScaleAnalysis out;
  out.input = input;
  out.totals = analyze_series(input.totals, input, false);
  for (const auto& stage : input.stages) out.stages.push_back(analyze_series(stage, input, matches(input.flat, stage)));
  for (size_t i = 0; i < out.stages.size(); ++i) {
    const auto& n = out.stages[i].crossing_n;
    if (n && (!out.first_stage || *n < *out.stages[*out.first_stage].crossing_n)) out.first_stage = i;
  }
  // A stage's peak is the whole process's while it runs, so the run passes the limit no
  // later than its first stage does, whatever the totals' own fit says (the totals mix
  // stages that lead at different sizes, which no one model fits well).
  if (out.first_stage) {
    const SeriesAnalysis& first = out.stages[*out.first_stage];
    if (!out.totals.crossing_n || *first.crossing_n < *out.totals.crossing_n) {
      out.totals.crossing_n = first.crossing_n;
      out.totals.crossing_n_range = first.crossing_n_range;
      out.totals.crossing_refits_never = first.crossing_refits_never;
      out.totals_crossing_by_stage = true;
    }
  }
  for (const auto& name : input.flat) {
    const bool known = std::any_of(input.stages.begin(), input.stages.end(),
                                   [&](const Series& s) { return s.name == name || s.path == name; });
    if (!known) out.unknown_flat.push_back(name);
  }
  return out;
}

std::string render_scale_json(const ScaleAnalysis& a) {
  const ScaleInput& in = a.input;
  json runs = json::array();
  for (const auto& r : in.runs) {
    json run = {{"n", r.n}, {"status", r.status}};
    if (!r.reason.empty()) run["reason"] = r.reason;
    if (!r.dir.empty()) run["dir"] = r.dir;
    if (r.status == "ok" || r.status == "failed") {
      run["exit_code"] = r.exit_code;
      run["duration_s"] = r.duration_s;
      run["peak_heap_bytes"] = r.peak_heap_bytes;
      run["peak_rss_bytes"] = r.peak_rss_bytes;
    }
    run["predicted_peak_rss_bytes"] = number_or_null(r.predicted_peak_bytes);
    runs.push_back(run);
  }
  json stages = json::array();
  for (const auto& s : a.stages) stages.push_back(series_json(s, in));
  json crossing = {{"ram_bytes", in.ram_bytes},
                   {"metric", metric_name(in.metric)},
                   {"n", number_or_null(a.totals.crossing_n)},
                   {"n_range", a.totals.crossing_n_range
                                   ? json::array({a.totals.crossing_n_range->first, a.totals.crossing_n_range->second})
                                   : json(nullptr)},
                   {"first_stage", a.first_stage ? json(a.stages[*a.first_stage].series.path) : json(nullptr)},
                   {"first_stage_n", a.first_stage ? json(*a.stages[*a.first_stage].crossing_n) : json(nullptr)},
                   {"n_from", a.totals_crossing_by_stage ? "first_stage" : "totals"}};
  json flags = json::array();
  for (const auto& s : a.stages)
    if (s.flag) flags.push_back({{"stage", s.series.path}, {"reason", *s.flag}});
  for (const auto& name : a.unknown_flat) flags.push_back({{"stage", name}, {"reason", "declared flat but no run had it"}});
  json out = {{"schema", "memstage.scale/1"},
              {"command", in.command},
              {"sizes", in.sizes},
              {"ram_bytes", in.ram_bytes},
              {"metric", metric_name(in.metric)},
              {"mode", in.mode},
              {"flat", in.flat},
              {"criterion", a.totals.of(in.metric).criterion},
              {"runs", runs},
              {"totals", series_json(a.totals, in)},
              {"stages", stages},
              {"crossing", crossing},
              {"flags", flags}};
  return out.dump(2) + "\n";
}

std::string render_scale_text(const ScaleAnalysis& a, bool with_runs) {
  const ScaleInput& in = a.input;
  std::string out;
  for (const auto& r : with_runs ? in.runs : std::vector<RunRecord>{}) {
    out += "n=" + format_n(r.n) + ": ";
    if (r.status == "ok") {
      out += "peak heap " + format_bytes(r.peak_heap_bytes) + ", peak RSS " + format_bytes(r.peak_rss_bytes) +
             printf_string(", %.2f s", r.duration_s);
    } else {
      out += r.status + (r.reason.empty() ? "" : ": " + r.reason);
    }
    out += "\n";
  }
  const std::string metric = in.metric == Metric::kHeap ? "peak heap" : "peak RSS";
  out += std::string(with_runs ? "\n" : "") + "Models of " + metric + " (" + a.totals.of(in.metric).criterion + "):\n";
  const double largest_n = a.totals.series.points.empty() ? 0 : a.totals.series.points.back().n;
  out += pad("stage", 28) + pad("model", 10) + pad("fit (bytes)", 36) + pad("LOO error", 12) +
         pad("per unit @" + format_n(largest_n), 16) + "reaches " + format_bytes(in.ram_bytes) + " at n\n";
  auto row = [&](const SeriesAnalysis& s, const std::string& label) {
    const ModelScore* best = s.of(in.metric).best();
    std::string line = pad(label, 28);
    if (!best) return line + "(no points)\n";
    const double n_max = s.series.points.back().n;
    line += pad(model_name(best->fit.model), 10) + pad(best->fit.formula(), 36) +
            pad(best->loo_rms_bytes ? format_bytes(*best->loo_rms_bytes) : "-", 12) +
            pad(format_bytes(best->fit.slope(n_max)) + "/n", 16) + crossing_text(s);
    if (s.flag) line += "  [FLAG]";
    return line + "\n";
  };
  out += row(a.totals, "(total)");
  for (const auto& s : a.stages) out += row(s, s.series.path);
  out += "\n";
  if (a.totals.crossing_n) {
    out += "Total " + metric + " passes " + format_bytes(in.ram_bytes) + " at n ≈ " + format_n(*a.totals.crossing_n);
    if (a.totals_crossing_by_stage) out += " (when its first stage does)";
    if (a.totals.crossing_n_range) {
      out += " (leave-one-out refits: " + format_n(a.totals.crossing_n_range->first) + "–" +
             format_n(a.totals.crossing_n_range->second) + ")";
    }
    out += "\n";
  } else if (a.totals.series.points.size() < 2) {
    out += "Fewer than two sizes measured: no prediction\n";
  } else if (a.totals.of(in.metric).best()) {
    out += "Total " + metric + " never passes " + format_bytes(in.ram_bytes) + " by the chosen model\n";
  }
  if (a.first_stage) {
    const auto& s = a.stages[*a.first_stage];
    out += "First stage to pass it: " + s.series.path + " at n ≈ " + format_n(*s.crossing_n) + "\n";
  }
  for (const auto& s : a.stages)
    if (s.flag) out += "FLAG " + s.series.path + ": " + *s.flag + "\n";
  for (const auto& name : a.unknown_flat) out += "note: --flat " + name + ": no run had such a stage\n";
  return out;
}

std::string render_scale_html(const ScaleAnalysis& a) {
  const ScaleInput& in = a.input;
  std::string command;
  for (const auto& c : in.command) command += (command.empty() ? "" : " ") + c;
  std::string out = reports::html_page_start(
      "memstage scale",
      ".axis{stroke:#444}.tick{font-size:11px;fill:#444}.title{font-weight:bold;font-size:13px}"
      ".ram{stroke:#c00;stroke-dasharray:6 4}.fit{fill:none;stroke-width:2}.fit.heap{stroke:#27a}"
      ".fit.rss{stroke:#e80}.dot.heap{fill:#27a}.dot.rss{fill:#e80}.flag{color:#c00;font-weight:bold}");
  out += "<p><code>" + html_escape(command) + "</code></p><p>RAM limit " + html_escape(format_bytes(in.ram_bytes)) +
         "; models of peak " + metric_name(in.metric) + " chosen by " + html_escape(a.totals.of(in.metric).criterion) +
         ". <span style=\"color:#27a\">■ heap</span> <span style=\"color:#e80\">■ RSS</span></p>";
  out += "<table><tr><th>n</th><th>status</th><th>peak heap</th><th>peak RSS</th><th>time</th></tr>";
  for (const auto& r : in.runs) {
    out += "<tr><td>" + format_n(r.n) + "</td><td>" + html_escape(r.status + (r.reason.empty() ? "" : ": " + r.reason)) +
           "</td><td>" + (r.status == "ok" ? html_escape(format_bytes(r.peak_heap_bytes)) : "") + "</td><td>" +
           (r.status == "ok" ? html_escape(format_bytes(r.peak_rss_bytes)) : "") + "</td><td>" +
           (r.status == "ok" ? printf_string("%.2f s", r.duration_s) : "") + "</td></tr>";
  }
  out += "</table>";
  if (a.totals.crossing_n) {
    out += "<p><b>Total peak " + std::string(metric_name(in.metric)) + " passes " + html_escape(format_bytes(in.ram_bytes)) +
           " at n ≈ " + html_escape(crossing_text(a.totals)) + "</b>";
    if (a.first_stage) {
      out += "; first stage to pass it: <b>" + html_escape(a.stages[*a.first_stage].series.path) + "</b> at n ≈ " +
             format_n(*a.stages[*a.first_stage].crossing_n);
    }
    out += "</p>";
  }
  for (const auto& name : a.unknown_flat) out += "<p>--flat " + html_escape(name) + ": no run had such a stage</p>";
  SeriesAnalysis totals = a.totals;
  totals.series.name = "total";
  out += series_html(totals, in, true);
  for (const auto& s : a.stages) out += series_html(s, in, false);
  return out + reports::html_page_end();
}

}  // namespace memstage::scale
