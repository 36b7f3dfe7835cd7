#include "reports/render/html/html_page.h"

namespace memstage::reports {

namespace {

// Figures right-aligned in tabular digits, the first column (names) left.
constexpr std::string_view kHouseStyle =
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;font-variant-numeric:tabular-nums}"
    "th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}"
    "tr.group td{background:#fafafa;font-weight:bold;text-align:left}"
    "code{background:#f3f3f3;padding:0 3px}";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_page_start(std::string_view title, std::string_view extra_css) {
  const std::string escaped = html_escape(title);
  std::string out = "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>" + escaped + "</title><style>";
  out += kHouseStyle;
  out += extra_css;
  out += "</style></head><body>\n<h1>" + escaped + "</h1>\n";
  return out;
}

std::string html_page_end() { return "</body></html>\n"; }

}  // namespace memstage::reports
