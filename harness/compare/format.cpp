#include "harness/compare/format.h"

#include <cmath>
#include <cstdio>

namespace memstage::compare {

std::string format_seconds(double seconds) {
  char buf[32];
  if (std::fabs(seconds) < 1) {
    snprintf(buf, sizeof(buf), "%.0f ms", seconds * 1000);
  } else {
    snprintf(buf, sizeof(buf), "%.2f s", seconds);
  }
  return buf;
}

std::string format_percent(std::optional<double> percent) {
  if (!percent) return "n/a";
  char buf[32];
  snprintf(buf, sizeof(buf), "%+.1f%%", *percent);
  return buf;
}

size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;
  return width;
}

std::string pad_right(const std::string& text, size_t width) {
  const size_t w = display_width(text);
  return w >= width ? text : text + std::string(width - w, ' ');
}

std::string pad_left(const std::string& text, size_t width) {
  const size_t w = display_width(text);
  return w >= width ? text : std::string(width - w, ' ') + text;
}

}  // namespace memstage::compare
