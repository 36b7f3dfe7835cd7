// Small text helpers shared by the compare and diff renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "reports/render/html/html_page.h"
#include "reports/render/text/human_units.h"

namespace memstage::compare {

// Sizes and HTML escaping are memstage's one formatter and one page toolkit.
using reports::format_bytes;
using reports::format_signed_bytes;
using reports::html_escape;

std::string format_seconds(double seconds);
// "+12.5%", "-3.0%"; "n/a" when there is no base to divide by.
std::string format_percent(std::optional<double> percent);

// Pads or cuts to a column width (counting UTF-8 code points, so "–" is one column).
std::string pad_right(const std::string& text, size_t width);
std::string pad_left(const std::string& text, size_t width);
size_t display_width(const std::string& text);

}  // namespace memstage::compare
