// Medians with their spread, for figures repeated across runs.
#pragma once

#include <cstddef>
#include <vector>

namespace memstage::compare {

struct Summary {
  size_t count = 0;  // 0: no sample, the other fields mean nothing
  double median = 0;
  double min = 0;
  double max = 0;
};

// The median of an even count is the mean of the two middle values. Median, not mean:
// one run disturbed by the machine (a page-cache miss, another process) moves it little.
Summary summarize(std::vector<double> samples);

}  // namespace memstage::compare
