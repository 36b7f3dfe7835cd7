#include "reports/render/text/human_units.h"

#include <fmt/format.h>

#include <cmath>

namespace memstage::reports {

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const char* sign = bytes < 0 ? "-" : "";
  double v = std::fabs(bytes);
  if (v < 1024) return fmt::format("{}{:.0f} B", sign, v);
  int unit = 0;
  while (v >= 1024 && unit < 6) {
    v /= 1024;
    ++unit;
  }
  const int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
  return fmt::format("{}{:.{}f} {}", sign, v, decimals, kUnits[unit]);
}

std::string format_signed_bytes(double bytes) {
  if (bytes == 0) return "0 B";
  return (bytes > 0 ? "+" : "") + format_bytes(bytes);
}

std::string format_count(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_frame(const Frame& f) {
  std::string module = f.module;
  if (auto slash = module.rfind('/'); slash != std::string::npos) module = module.substr(slash + 1);
  if (f.function.empty()) {
    return fmt::format("{}+0x{:x}", module.empty() ? "??" : module, f.module_offset);
  }
  std::string s = f.function;
  if (!f.file.empty()) {
    std::string file = f.file;
    if (auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
    s += fmt::format(" ({}:{})", file, f.line);
  } else if (!module.empty()) {
    s += fmt::format(" [{}]", module);
  }
  if (f.inlined) s += " [inlined]";
  return s;
}

}  // namespace memstage::reports
