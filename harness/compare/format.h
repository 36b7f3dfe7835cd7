// Small text helpers shared by the compare and diff renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace memstage::compare {

// Escapes & < > " ' for HTML text and attribute values: stage names and commands come
// from the traced program and may hold anything.
std::string html_escape(const std::string& text);

// 1536 → "1.5 KiB"; powers of 1024, as the rest of memstage writes sizes.
std::string format_bytes(double bytes);
// A signed size: "+1.5 MiB", "-512 B", "0 B".
std::string format_signed_bytes(double bytes);
std::string format_seconds(double seconds);
// "+12.5%", "-3.0%"; "n/a" when there is no base to divide by.
std::string format_percent(std::optional<double> percent);

// Pads or cuts to a column width (counting UTF-8 code points, so "–" is one column).
std::string pad_right(const std::string& text, size_t width);
std::string pad_left(const std::string& text, size_t width);
size_t display_width(const std::string& text);

}  // namespace memstage::compare
