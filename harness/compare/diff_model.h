// `memstage diff A B`: two reports side by side, totals first, then stages matched by path,
// each figure with its delta (B − A) absolute and in percent of A.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace memstage::compare {

inline constexpr const char* kDiffSchema = "memstage.diff/1";

enum class Unit { kBytes, kSeconds, kCount, kRatio };

struct MetricDelta {
  std::string name;  // the report contract's field name, e.g. "peak_heap_bytes"
  Unit unit = Unit::kBytes;
  std::optional<double> a, b;   // nullopt: the stage is missing on that side, or the figure was not measured there
  std::optional<double> delta;  // b − a, when both are there
  std::optional<double> percent;  // 100 · delta / a; nullopt when a is 0 or missing
};

struct DiffRow {
  std::string path;  // "" for the totals
  bool in_a = false, in_b = false;
  std::vector<MetricDelta> metrics;
};

struct DiffResult {
  std::string a_label, b_label;
  std::string a_allocator, b_allocator;
  std::string a_mode, b_mode;  // the capture mode each report says ("" when it does not)
  std::vector<DiffRow> rows;  // totals first, then A's stage order, then stages only B has
};

// A path repeated in one report (a stage per epoch) counts once, merged by files::read_figures'
// rule. Throws files::ReportFileError for a malformed figure.
DiffResult build_diff(const nlohmann::json& a, const nlohmann::json& b, const std::string& a_label,
                      const std::string& b_label);

std::string render_diff_text(const DiffResult& diff);
std::string render_diff_html(const DiffResult& diff);
nlohmann::ordered_json diff_to_json(const DiffResult& diff);

}  // namespace memstage::compare
