#include "harness/files/report_figures.h"

#include <algorithm>
#include <cmath>

#include "harness/files/report_json.h"

namespace memstage::files {

namespace {

using Json = nlohmann::json;

enum class Merge { kHighest, kSum };

struct FigureSpec {
  Figure figure;
  const char* name;      // as figure_name gives it
  const char* object;    // the scope's member holding the field; nullptr: the scope itself
  const char* field;
  Merge merge;
  double most = INFINITY;  // a larger value is malformed (a ratio above 1)
};

// Duration is not a field of a scope: duration_of reads it.
constexpr FigureSpec kSpecs[] = {
    {Figure::kDurationS, "duration_s", nullptr, nullptr, Merge::kSum},
    {Figure::kPeakHeapBytes, "peak_heap_bytes", nullptr, "peak_heap_bytes", Merge::kHighest},
    {Figure::kPeakRssBytes, "peak_rss_bytes", nullptr, "peak_rss_bytes", Merge::kHighest},
    {Figure::kLeakedBytes, "leaked_bytes", nullptr, "leaked_bytes", Merge::kSum},
    {Figure::kAllocations, "allocations", nullptr, "allocations", Merge::kSum},
    {Figure::kBytesAllocated, "bytes_allocated", nullptr, "bytes_allocated", Merge::kSum},
    {Figure::kFragmentationRatio, "fragmentation", "fragmentation", "ratio", Merge::kHighest, 1.0},
    {Figure::kAllocatorResidentBytes, "allocator_resident_bytes", "rss_breakdown", "allocator_resident_bytes",
     Merge::kHighest},
    {Figure::kPeakDeviceBytes, "peak_device_bytes", nullptr, "peak_device_bytes", Merge::kHighest},
    {Figure::kLiveBytes, "live_bytes", "rss_breakdown", "live_bytes", Merge::kHighest},
    {Figure::kAllocatorInUseBytes, "allocator_in_use_bytes", "rss_breakdown", "allocator_in_use_bytes", Merge::kHighest},
    {Figure::kBreakdownRssBytes, "rss_bytes", "rss_breakdown", "rss_bytes", Merge::kHighest},
    {Figure::kTracerBytes, "tracer_bytes", "rss_breakdown", "tracer_bytes", Merge::kHighest},
    {Figure::kPeakHeapIncreaseBytes, "peak_heap_increase_bytes", nullptr, "peak_heap_increase_bytes", Merge::kHighest},
    {Figure::kPeakRssIncreaseBytes, "peak_rss_increase_bytes", nullptr, "peak_rss_increase_bytes", Merge::kHighest},
    {Figure::kRetainedBytes, "retained_bytes", nullptr, "retained_bytes", Merge::kSum},
};
static_assert(std::size(kSpecs) == kFigureCount);

// A figure's value: nullopt when null or absent; ReportFileError when it is something else
// than a number in 0..most.
std::optional<double> measured(const Json& holder, const char* field, double most, const std::string& where) {
  if (!holder.is_object()) return std::nullopt;
  const auto it = holder.find(field);
  if (it == holder.end() || it->is_null()) return std::nullopt;
  const double value = it->is_number() ? it->get<double>() : NAN;
  if (!(value >= 0 && value <= most)) {
    throw ReportFileError(where + "." + field + ": " + it->dump() + " is not a figure (a number " +
                          (std::isinf(most) ? std::string("of 0 or more") : "in 0..1") + ")");
  }
  return value;
}

// An `estimated` flag: estimated unless the report says it is not.
bool estimated(const Json& scope, const char* object) {
  const auto holder = scope.find(object);
  if (holder == scope.end() || !holder->is_object()) return true;
  const auto flag = holder->find("estimated");
  return flag == holder->end() || !flag->is_boolean() || flag->get<bool>();
}

std::optional<double> duration_of(const Json& report, const Json& scope, bool is_totals, const std::string& where) {
  if (is_totals) return measured(report, "duration_s", INFINITY, "report");
  // A row grouping several instances of its path (stage_grouping) says how long they were open.
  if (scope.contains("open_s")) return measured(scope, "open_s", INFINITY, where);
  const auto start = measured(scope, "start_s", INFINITY, where);
  const auto end = measured(scope, "end_s", INFINITY, where);
  if (!start || !end) return std::nullopt;
  return std::max(0.0, *end - *start);
}

ScopeFigures scope_figures(const Json& report, const Json& scope, bool is_totals, bool leaks_measured,
                           const std::string& where) {
  if (!scope.is_object()) throw ReportFileError(where + " is not an object of figures");
  ScopeFigures figures;
  figures.rows = 1;
  for (const FigureSpec& spec : kSpecs) {
    if (spec.figure == Figure::kDurationS) {
      figures[spec.figure] = duration_of(report, scope, is_totals, where);
      continue;
    }
    const Json& holder = spec.object ? scope.value(spec.object, Json()) : scope;
    figures[spec.figure] = measured(holder, spec.field, spec.most, spec.object ? where + "." + spec.object : where);
  }
  figures.fragmentation_estimated = estimated(scope, "fragmentation");
  figures.breakdown_estimated = estimated(scope, "rss_breakdown");
  if (!leaks_measured) figures[Figure::kLeakedBytes] = std::nullopt;
  // Null device memory is a run that used none: nothing unmeasured.
  if (!figures[Figure::kPeakDeviceBytes]) figures[Figure::kPeakDeviceBytes] = 0.0;
  return figures;
}

void merge_into(ScopeFigures& into, const ScopeFigures& row) {
  for (const FigureSpec& spec : kSpecs) {
    std::optional<double>& have = into[spec.figure];
    const std::optional<double>& now = row[spec.figure];
    if (!now) continue;
    have = !have ? *now : spec.merge == Merge::kSum ? *have + *now : std::max(*have, *now);
  }
  into.rows += row.rows;
  into.fragmentation_estimated = into.fragmentation_estimated || row.fragmentation_estimated;
  into.breakdown_estimated = into.breakdown_estimated || row.breakdown_estimated;
}

std::string string_field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string_view figure_name(Figure figure) { return kSpecs[static_cast<size_t>(figure)].name; }

const ScopeFigures* ReportFigures::stage(const std::string& path) const {
  const auto it = stages.find(path);
  return it == stages.end() ? nullptr : &it->second;
}

ReportFigures read_figures(const Json& report, const std::string& source) {
  ReportFigures figures;
  figures.mode = string_field(report, "mode");
  figures.allocator = string_field(report, "allocator");
  const Json& totals = report.value("totals", Json::object());
  figures.used_device = totals.is_object() && totals.value("peak_device_bytes", Json()).is_number();
  // Reports before null leak figures said so in a flag of their own.
  const bool leaks_measured = report.value("leaks_measured", Json(true)) != Json(false);
  if (const auto w = report.find("warnings"); w != report.end() && w->is_array()) {
    for (const Json& warning : *w) {
      if (warning.is_string()) figures.warnings.push_back(warning.get<std::string>());
    }
  }
  figures.totals = scope_figures(report, totals, true, leaks_measured, source + ": totals");
  const auto stages = report.find("stages");
  if (stages == report.end() || !stages->is_array()) return figures;
  for (size_t i = 0; i < stages->size(); ++i) {
    const Json& stage = (*stages)[i];
    const std::string name = string_field(stage, "name");
    std::string path = string_field(stage, "path");
    if (path.empty()) path = name;
    ScopeFigures row =
        scope_figures(report, stage, false, leaks_measured, source + ": stages[" + std::to_string(i) + "]");
    row.name = name.empty() ? path : name;
    const auto [it, fresh] = figures.stages.try_emplace(path, row);
    if (fresh) {
      figures.stage_paths.push_back(path);
    } else {
      merge_into(it->second, row);
    }
    std::vector<std::string>& paths = figures.paths_by_name[name];
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  return figures;
}

}  // namespace memstage::files
