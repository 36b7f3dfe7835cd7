// `memstage compare`'s outputs: the text table on stdout and compare.html.
#pragma once

#include <string>

#include "harness/compare/compare_model.h"

namespace memstage::compare {

std::string render_compare_text(const CompareResult& result);

// One self-contained page (inline CSS and SVG, no script, nothing fetched) meant to sit in
// the compare folder: each run's report.html is linked relatively.
std::string render_compare_html(const CompareResult& result);

// Bar charts, shared with the diff page. One group per row label, one bar per series;
// `low`/`high` draw a min–max whisker when given.
struct BarSeries {
  std::string name;
  std::vector<double> values;
  std::vector<double> low, high;  // empty: no whiskers
};
std::string svg_bar_chart(const std::string& title, const std::vector<std::string>& row_labels,
                          const std::vector<BarSeries>& series, std::string (*format_value)(double));

}  // namespace memstage::compare
