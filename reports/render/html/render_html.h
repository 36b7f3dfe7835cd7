// One self-contained HTML page for a Report: opens offline from file://, no network.
#pragma once

#include <string>

#include "reports/model/report_model.h"
#include "reports/render/html/call_tree.h"

namespace memstage::reports {

// The page carries the report as JSON in <script type="application/json"> with '<', '>',
// '&', U+2028 and U+2029 escaped, so names taken from the traced program can never end
// the script element; the page's script shows every name as text, never as markup.
// `call_tree`: the call tree of every stack of this report, made before (make_call_tree),
// which the page uses where it is the tree it would make; the page is the same without it.
std::string render_html(const Report& report, const StacksCallTree* call_tree);
inline std::string render_html(const Report& report) { return render_html(report, nullptr); }

}  // namespace memstage::reports
