// How every renderer writes an address and names a frame, so that a frame without symbols
// reads the same in report.json, on the page and in the pprof export.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "reports/model/report_model.h"

namespace memstage::reports {

// "0x..." text: addresses do not fit in a JavaScript number.
inline std::string hex_address(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// What a frame is called: its function, or "module+0xOFFSET" without one, or its address.
inline std::string frame_label(const Frame& frame) {
  if (!frame.function.empty()) return frame.function;
  if (!frame.module.empty()) {
    const std::string_view module = frame.module;
    const auto slash = module.rfind('/');
    const std::string_view base = slash == std::string_view::npos ? module : module.substr(slash + 1);
    return std::string(base) + "+" + hex_address(frame.module_offset);
  }
  return hex_address(frame.address);
}

// Where a stack asked for its memory, in a line: the script's line or the first program
// frame (allocation_site), as the live view and the metrics name a stack.
inline std::string site_label(const Report& report, StackIndex stack) {
  const auto site = allocation_site(report, report.stacks[stack]);
  return site ? frame_label(report.frame(*site)) : std::string("(no frames)");
}

}  // namespace memstage::reports
