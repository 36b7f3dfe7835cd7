// Chrome trace event JSON (the "JSON Object Format"), for Perfetto and chrome://tracing.
#pragma once

#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

// Live heap and RSS as counter events ("C"), stages as complete slices ("X") nested by
// time on one track, the heap peak as an instant event; timestamps in microseconds.
std::string render_chrome_trace(const Report& report);

}  // namespace memstage::reports
