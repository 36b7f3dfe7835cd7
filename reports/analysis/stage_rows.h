// The rows of Report::stages. A run that marks each batch of a loop as a stage has as many
// stage instances as batches, and a report carrying each with the stacks held at its peak
// grows with the run's length (an hour of 1 ms batches is millions of instances, each with
// its stacks in report.json). Up to kMaxUngroupedInstances, every instance is a row of its
// own. Past it, rows of their own are kept for the first kFirstInstancesKept instances and
// for the instance with the highest peak of each path; the other instances of a path
// become one row (docs/architecture.md, "stage instances grouped by path"):
//
//   instances       how many it stands for
//   start_s, end_s  the first's start, the last's end; closed when all were
//   peak figures    the highest of its instances: its peak time, the breakdown of RSS then
//                   and the stacks held at it are that instance's
//   counts          allocations, frees, bytes, temporaries, retained, leaked: summed
//   open_s          the time its instances were open, summed
//
// The rows partition the instances: summing a path's rows (highest peaks, summed counts)
// gives the path's figures over all its instances, whether or not they were grouped.
// The analysis groups every figure keyed by stage (leaks, sites, timeline, device) by row,
// through row_of(); renderers show rows and never regroup.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

// What the grouping needs to know of one stage instance.
struct StageInstanceKey {
  uint32_t path = 0;  // any number naming the instance's path: same path, same number
  uint64_t peak_heap_bytes = 0;
};

class StageRows {
 public:
  // A stage table of a thousand rows lays out at once and its report stays a few MB.
  static constexpr size_t kMaxUngroupedInstances = 1000;
  static constexpr size_t kFirstInstancesKept = 100;

  // The run's stage instances in the order they began (a parent before its children).
  explicit StageRows(const std::vector<StageInstanceKey>& instances);

  bool grouped() const { return grouped_; }
  size_t rows() const { return row_first_.size(); }
  // The row of an instance; -1 (outside every stage) stays -1.
  int row_of(int instance) const {
    return instance < 0 || static_cast<size_t>(instance) >= row_of_.size() ? instance : row_of_[instance];
  }
  // The instance whose peak its row reports (its time, breakdown and stacks): only these
  // need the stacks held at their peaks.
  bool holds_row_peak(size_t instance) const { return instance < row_of_.size() && row_peak_[row_of_[instance]] == instance; }

  // Folds one instance into its row, the instances in the order they began, each once.
  // `instance.parent` is an instance index; the row's is a row index.
  void add(size_t index, StageReport instance);
  // The rows, in the order of their first instances (a parent's row before its children's).
  std::vector<StageReport> take_rows();
  // What the report says about the grouping; nothing when every instance is a row.
  std::optional<StageGrouping> grouping() const;

 private:
  bool grouped_ = false;
  std::vector<int> row_of_;          // by instance
  std::vector<size_t> row_first_;    // by row: its first instance
  std::vector<size_t> row_peak_;     // by row: the instance whose peak it reports
  std::vector<StageReport> rows_;
  std::vector<bool> row_started_;
};

}  // namespace memstage::reports
