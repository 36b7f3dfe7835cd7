// pprof's profile.proto, gzipped: what `go tool pprof` and other pprof readers load.
#pragma once

#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

// Sample types, in this order: inuse_space [bytes] (live at the run's heap peak),
// alloc_space [bytes], alloc_objects [count], leaked_space [bytes]. One sample per stack and
// stage, labelled "stage" with the stage's path; one mapping per module.
std::string render_pprof(const Report& report);

// Go's heap profile, as runtime/pprof writes it and Parca, Pyroscope and `go tool pprof`
// read it: sample types alloc_objects, alloc_space, inuse_objects, inuse_space, where in use
// is allocated and not freed so far (the report's leaks); one sample per stack and stage.
// `default_type`: "inuse_space" (/debug/pprof/heap) or "alloc_space" (/debug/pprof/allocs).
// In sample mode the values are the report's estimates and the period its sampling rate.
std::string render_pprof_heap(const Report& report, const std::string& default_type);

}  // namespace memstage::reports
