// The stages as the HTML page shows them. A run that marks each batch of a loop as a stage
// has as many stage instances as batches, and a page carrying each one grows with the run's
// length (an hour of 1 ms batches: millions of rows). Past kMaxPageStages instances, the
// instances that share a path become one row: from the first's start to the last's end,
// the highest peaks, the summed counts, the stacks of the instance with the highest peak,
// and how many instances it stands for. Below that, rows are the report's stages.
#pragma once

#include <cstdint>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

class PageStages {
 public:
  // A stage table of a thousand rows still lays out at once; its data is under a megabyte.
  static constexpr size_t kMaxPageStages = 1000;

  explicit PageStages(const Report& report);

  const std::vector<StageReport>& rows() const { return merged_ ? rows_ : report_.stages; }
  // The row of one of the report's stage indices (-1 stays -1: outside every stage).
  int row(int stage) const {
    if (!merged_ || stage < 0 || static_cast<size_t>(stage) >= row_of_.size()) return stage;
    return row_of_[stage];
  }
  uint64_t instances(size_t row) const { return merged_ ? instances_[row] : 1; }
  bool merged() const { return merged_; }

 private:
  const Report& report_;
  bool merged_ = false;
  std::vector<StageReport> rows_;
  std::vector<int> row_of_;          // by the report's stage index
  std::vector<uint64_t> instances_;  // by row
};

}  // namespace memstage::reports
