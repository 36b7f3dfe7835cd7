// What `memstage scale` measured, the fits of it, and the three ways it is written out:
// a text table (stdout), scale.json (for scripts) and scale.html (one offline page).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/files/report_figures.h"
#include "harness/scale/fit.h"

namespace memstage::scale {

enum class Metric { kHeap, kRss };
const char* metric_name(Metric metric);  // "heap", "rss"

// One size of the sweep, run or not.
struct RunRecord {
  double n = 0;
  std::string status;  // "ok", "failed" (non-zero exit or no report), "skipped", "not run"
  std::string reason;  // why not "ok", in words
  std::string dir;     // the run's folder, relative to the scale folder
  int exit_code = 0;
  double duration_s = 0;
  double peak_heap_bytes = 0;
  double peak_rss_bytes = 0;
  std::optional<double> predicted_peak_bytes;  // the prediction made before running it
};

struct SeriesPoint {
  double n = 0;
  double peak_heap_bytes = 0;
  double peak_rss_bytes = 0;
};

// The totals, or one stage (by path) across the runs it appeared in.
struct Series {
  std::string name;
  std::string path;
  std::vector<SeriesPoint> points;
};

struct ScaleInput {
  std::vector<std::string> command;  // with {n} still in it
  std::vector<double> sizes;         // as asked, increasing
  double ram_bytes = 0;
  Metric metric = Metric::kRss;      // what the models and the crossing are about
  std::string mode = "full";
  std::vector<std::string> flat;     // stage names or paths declared not to grow
  std::vector<RunRecord> runs;
  Series totals;
  std::vector<Series> stages;
};

struct SeriesAnalysis {
  Series series;
  Selection heap, rss;
  const Selection& of(Metric metric) const { return metric == Metric::kHeap ? heap : rss; }
  std::optional<double> crossing_n;                          // chosen model of the chosen metric reaches the RAM
  std::optional<std::pair<double, double>> crossing_n_range;  // over the leave-one-out refits
  size_t crossing_refits_never = 0;                          // refits that never reach it
  double growth_fraction = 0;  // (peak at the largest size - at the smallest) / at the smallest
  bool declared_flat = false;
  std::optional<std::string> flag;  // why a declared-flat stage is not
};

struct ScaleAnalysis {
  ScaleInput input;
  SeriesAnalysis totals;
  std::vector<SeriesAnalysis> stages;
  std::optional<size_t> first_stage;  // index into stages: the one whose model reaches the RAM first
  // The totals' crossing is the first stage's, earlier than the totals' own fit put it.
  bool totals_crossing_by_stage = false;
  std::vector<std::string> unknown_flat;  // --flat names no run had
};

// Fits everything and applies the --flat rule: a declared-flat stage is flagged when its
// peak grows more than 10% from the smallest size to the largest, or when its chosen
// model is not `constant` and it grows more than 1% (below that it is sampling noise).
ScaleAnalysis analyze(const ScaleInput& input);

// The peak the chosen model of `points` predicts at n; nothing with fewer than two sizes.
std::optional<double> predict(const std::vector<Point>& points, double n);

std::vector<Point> metric_points(const Series& series, Metric metric);

// One run's points at n, from its report's figures (files::read_figures, the merge rule of
// every command: a stage path entered several times counts with its highest peaks): the
// totals' and each stage path's, a series added for a path no earlier run had. A figure
// the report did not measure counts as 0.
void add_points(ScaleInput& input, double n, const files::ReportFigures& figures);

std::string render_scale_json(const ScaleAnalysis& analysis);
// `with_runs`: a line per run first (left out where the progress lines already showed them
// on the same terminal).
std::string render_scale_text(const ScaleAnalysis& analysis, bool with_runs = true);
std::string render_scale_html(const ScaleAnalysis& analysis);


}  // namespace memstage::scale
