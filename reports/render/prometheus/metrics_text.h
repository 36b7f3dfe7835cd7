// A report as Prometheus scrapes it: the text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), what `/metrics` answers.
#pragma once

#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

// The content type that goes with render_prometheus's text.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// At most this many memstage_growth_bytes_per_second series, the fastest-growing sites:
// a label per stack would make a series per stack, without bound.
inline constexpr size_t kMetricsGrowthSites = 20;
// At most this many memstage_stage_peak_heap_bytes series (stage paths), the highest peaks.
inline constexpr size_t kMetricsStages = 50;

// Every memstage_* family (docs/serving.md lists them), labelled by process (pid, command,
// and rank and host where the process's environment named them).
std::string render_prometheus(const Report& report);

// A label value as the format writes it: backslash, double quote and newline escaped.
std::string prometheus_label_value(const std::string& value);

}  // namespace memstage::reports
