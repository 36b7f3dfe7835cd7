// The toolkit of memstage's static pages (compare, diff, scale): one escaping and one
// page frame (doctype, charset, title, the house stylesheet). The report page itself is
// a script over embedded JSON (render_html.cpp) and needs neither.
#pragma once

#include <string>
#include <string_view>

namespace memstage::reports {

// & < > " ' as entities: for text and for quoted attribute values. Stage names,
// commands and paths come from the traced program and may hold anything.
std::string html_escape(std::string_view text);

// "<!DOCTYPE html>...<body><h1>TITLE</h1>": a self-contained page (inline CSS, nothing
// fetched) with the house stylesheet (tables of figures, code, groups) and `extra_css`.
std::string html_page_start(std::string_view title, std::string_view extra_css = {});
std::string html_page_end();

}  // namespace memstage::reports
