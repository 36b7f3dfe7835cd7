#include "harness/cli/sizes.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace memstage::harness {

std::optional<uint64_t> parse_size(const std::string& text) {
  const char* s = text.c_str();
  while (isspace(static_cast<unsigned char>(*s))) ++s;
  if (!isdigit(static_cast<unsigned char>(*s)) && *s != '.') return std::nullopt;
  char* end = nullptr;
  const double number = strtod(s, &end);
  if (end == s || !std::isfinite(number) || number < 0) return std::nullopt;
  std::string unit;
  for (const char* p = end; *p; ++p) {
    if (!isspace(static_cast<unsigned char>(*p))) unit += static_cast<char>(tolower(static_cast<unsigned char>(*p)));
  }
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  if (unit.size() == 2 && unit[1] == 'i') unit.pop_back();
  double scale = 1;
  if (unit.empty()) {
    scale = 1;
  } else if (unit == "k") {
    scale = 1024.0;
  } else if (unit == "m") {
    scale = 1024.0 * 1024;
  } else if (unit == "g") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "t") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  const double bytes = std::round(number * scale);
  if (bytes > 1.8e19) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

}  // namespace memstage::harness
