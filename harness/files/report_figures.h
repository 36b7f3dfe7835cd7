// The figures the commands that read reports (gate, diff, compare, scale) take from a
// report.json, per scope: the totals, and each stage path with its rows merged by one rule.
// Every such command reads them here, so that they cannot disagree on the same report.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace memstage::files {

enum class Figure {
  kDurationS,
  kPeakHeapBytes,
  kPeakRssBytes,
  kLeakedBytes,
  kAllocations,
  kBytesAllocated,
  kFragmentationRatio,
  kAllocatorResidentBytes,
  kPeakDeviceBytes,
  // rss_breakdown's other steps, at the scope's peak (allocator_resident_bytes is above).
  kLiveBytes,
  kAllocatorInUseBytes,
  kBreakdownRssBytes,
  kTracerBytes,
  kPeakHeapIncreaseBytes,  // stages only: the rise above the stage's start
  kPeakRssIncreaseBytes,
  kRetainedBytes,  // stages only: allocated in the stage and live at its end
};
inline constexpr size_t kFigureCount = 16;

// The report contract's name of a figure ("peak_heap_bytes", "fragmentation" for its ratio,
// "rss_bytes" for rss_breakdown's).
std::string_view figure_name(Figure figure);

// One scope's figures. nullopt: the report did not measure it (null in report.json, absent,
// or leaks in a mode that does not follow blocks), which no reader may take for 0. The
// device peak of a run that used no device memory (null) is 0.
struct ScopeFigures {
  std::array<std::optional<double>, kFigureCount> values;
  int rows = 0;           // the report's rows merged into this scope (1 for the totals)
  std::string name;       // the stage's name (its path's last part); "" for the totals
  // The allocator could not say: the ratio, or the breakdown, is estimated (or absent).
  bool fragmentation_estimated = true;
  bool breakdown_estimated = true;
  const std::optional<double>& operator[](Figure figure) const { return values[static_cast<size_t>(figure)]; }
  std::optional<double>& operator[](Figure figure) { return values[static_cast<size_t>(figure)]; }
};

struct ReportFigures {
  std::string mode;                   // "full", "aggregate", "sample", "stats"; "" when not said
  std::string allocator;              // as the tracer detected it; "" when not said
  bool used_device = false;           // the run used device memory (CUDA): its device peak is a number
  std::vector<std::string> warnings;  // the report's own (a damaged trace, a killed process)
  ScopeFigures totals;
  std::vector<std::string> stage_paths;  // in the order they first appear
  std::map<std::string, ScopeFigures> stages;
  // Stage name -> the paths it appears under, for keys that name a stage rather than a path.
  std::map<std::string, std::vector<std::string>> paths_by_name;

  const ScopeFigures* stage(const std::string& path) const;
};

// The merge rule for a stage path entered several times (one stage per epoch): peaks,
// fragmentation and each step of the RSS breakdown take the highest row (the worst
// occurrence; the steps stay in order, live <= in use <= resident <= RSS), durations, counts
// and leaks add up, and a figure is estimated when a row's is. A figure is measured when a
// row measured it. Throws ReportFileError naming the field when a figure is there but is not
// a non-negative number ("big", -5, a ratio above 1).
ReportFigures read_figures(const nlohmann::json& report, const std::string& source);

}  // namespace memstage::files
