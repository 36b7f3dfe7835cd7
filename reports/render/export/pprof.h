// pprof's profile.proto, gzipped: what `go tool pprof` and other pprof readers load.
#pragma once

#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

// Sample types, in this order: inuse_space [bytes] (live at the run's heap peak),
// alloc_space [bytes], alloc_objects [count], leaked_space [bytes]. One sample per stack and
// stage, labelled "stage" with the stage's path; one mapping per module.
std::string render_pprof(const Report& report);

}  // namespace memstage::reports
