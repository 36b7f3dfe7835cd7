// One self-contained HTML page for a Report: opens offline from file://, no network.
#pragma once

#include <string>

#include "reports/model/report_model.h"

namespace memstage::reports {

// The page carries the report as JSON in <script type="application/json"> with '<', '>',
// '&', U+2028 and U+2029 escaped, so names taken from the traced program can never end
// the script element; the page's script shows every name as text, never as markup.
std::string render_html(const Report& report);

}  // namespace memstage::reports
