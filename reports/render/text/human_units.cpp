#include "reports/render/text/human_units.h"

#include <fmt/format.h>

namespace memstage::reports {

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  const int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
  return fmt::format("{:.{}f} {}", v, decimals, kUnits[unit]);
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
