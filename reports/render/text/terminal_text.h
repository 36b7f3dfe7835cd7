// Text from the traced program (stage names, its command line, symbol and file names) on
// its way to a terminal: control characters would be obeyed there (an escape sequence can
// retitle the window, move the cursor, hide the lines before it), so they are shown
// escaped instead.
#pragma once

#include <string>
#include <string_view>

namespace memstage::reports {

// C0 controls and DEL as \n, \t, \r or \xNN; C1 controls (U+0080..U+009F) and the bidi
// overrides and isolates (U+202A..U+202E, U+2066..U+2069) as \uNNNN; bytes that are not
// UTF-8 as \xNN. Everything else, backslashes included, is unchanged.
std::string terminal_text(std::string_view text);
// The same for a whole printed table or report, whose line breaks are kept.
std::string terminal_lines(std::string_view text);

}  // namespace memstage::reports
