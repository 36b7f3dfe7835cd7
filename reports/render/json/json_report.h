// report.json: the contract of docs/architecture.md ("memstage.report/2") that scripts and CI read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

inline constexpr const char* kReportSchema = "memstage.report/2";

nlohmann::ordered_json report_to_json(const Report& report);
std::string render_json(const Report& report);

}  // namespace memstage::reports
