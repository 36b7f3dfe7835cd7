// Sizes and frames as people read them: "1.2 GiB", "leak_a (leaks.cpp:12)".
#pragma once

#include <cstdint>
#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

std::string format_bytes(uint64_t bytes);
std::string format_count(uint64_t n);
// "function (file:line)" or "module+0x1a2b" when nothing better is known.
std::string format_frame(const Frame& frame);

}  // namespace memstage::reports
