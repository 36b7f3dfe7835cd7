#include "reports/render/text/terminal_text.h"

#include <cstdint>
#include <cstdio>

namespace memstage::reports {

namespace {

// The length of the valid UTF-8 sequence at text[i] (0 when there is none) and its code point.
size_t utf8_sequence(std::string_view text, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length;
  uint32_t min;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, min = 0x80, code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, min = 0x800, code_point = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, min = 0x10000, code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return length;
}

std::string escaped(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  char escape[16];
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n' && keep_newlines) {
      out += '\n';
      ++i;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
      ++i;
    } else if (c < 0x80) {
      snprintf(escape, sizeof escape, "\\x%02x", c);
      out += escape;
      ++i;
    } else {
      uint32_t code_point = 0;
      const size_t length = utf8_sequence(text, i, code_point);
      if (length == 0) {
        snprintf(escape, sizeof escape, "\\x%02x", c);
        out += escape;
        ++i;
      } else if (code_point <= 0x9F || (code_point >= 0x202A && code_point <= 0x202E) ||
                 (code_point >= 0x2066 && code_point <= 0x2069)) {
        snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(code_point));
        out += escape;
        i += length;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
    }
  }
  return out;
}

}  // namespace

std::string terminal_text(std::string_view text) { return escaped(text, false); }

std::string terminal_lines(std::string_view text) { return escaped(text, true); }

}  // namespace memstage::reports
