// The page's template, stylesheet and script, embedded at build time (embed_assets.cmake).
#pragma once

#include <string_view>

namespace memstage::reports::html_assets {

extern const std::string_view report_template_html;  // has {{STYLE}}, {{SCRIPT}}, {{DATA}}
extern const std::string_view report_css;
extern const std::string_view report_js;

}  // namespace memstage::reports::html_assets
