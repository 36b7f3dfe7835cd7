// Sizes and frames as people read them: "1.2 GiB", "leak_a (leaks.cpp:12)".
#pragma once

#include <cstdint>
#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

// The one bytes formatter: powers of 1024, three significant digits ("512 B", "1.50 KiB",
// "12.5 MiB", "-2.00 GiB"). Signed and fractional values come from deltas and fits.
std::string format_bytes(double bytes);
// A change in size: "+1.50 MiB", "-512 B", "0 B".
std::string format_signed_bytes(double bytes);
std::string format_count(uint64_t n);
// "function (file:line)" or "module+0x1a2b" when nothing better is known.
std::string format_frame(const Frame& frame);

}  // namespace memstage::reports
