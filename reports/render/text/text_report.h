// The terminal summary that `memstage run` prints and `memstage report --format text`
// writes: peaks, leaks, a per-stage table and the stacks holding memory at the peak.
#pragma once

#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

struct TextOptions {
  size_t stacks = 5;        // top stacks shown at the peak and among leaks
  size_t frames = 6;        // frames shown per stack
};

std::string render_text(const Report& report, const TextOptions& options = {});

}  // namespace memstage::reports
