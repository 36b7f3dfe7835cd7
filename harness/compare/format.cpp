#include "harness/compare/format.h"

#include <cmath>
#include <cstdio>

namespace memstage::compare {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = std::fabs(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[48];
  if (unit == 0) {
    snprintf(buf, sizeof(buf), "%s%.0f B", bytes < 0 ? "-" : "", value);
  } else {
    snprintf(buf, sizeof(buf), "%s%.*f %s", bytes < 0 ? "-" : "", value < 10 ? 2 : value < 100 ? 1 : 0, value,
             units[unit]);
  }
  return buf;
}

std::string format_signed_bytes(double bytes) {
  if (bytes == 0) return "0 B";
  return (bytes > 0 ? "+" : "") + format_bytes(bytes);
}

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
