// The live view of a run being written (`memstage live DIR`, `memstage run --live`): a
// terminal screen (ncurses) of the figures so far (TraceBeingWritten::so_far), drawn again
// every second, or as often as they take to gather (every third of the time at most).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "reports/analysis/analyzer.h"
#include "reports/model/report_model.h"

namespace memstage::harness {

// What the screen shows besides the figures: which list of stacks, how stages are sorted.
struct LiveChoices {
  bool growing = false;       // `v`: the stacks growing fastest, else those holding most now
  bool stages_by_peak = false;  // `s`: stages by their peak heap, else in the order they began
};

// The screen's lines for a report of the run so far, at most `width` characters each.
std::vector<std::string> live_lines(const reports::Report& report, const LiveChoices& choices, size_t width);

// Draws the run in `dir`, whose traces `traces` follows, until the user presses q (true) or
// `keep_going` turns false.
// Leaves the terminal as it found it, on q and at the end; follows a resize. With
// `own_interrupt`, Ctrl-C ends the view too (`memstage live`); `run --live` leaves SIGINT to
// the traced command, whose end ends the view.
bool run_live_view(const std::string& dir, reports::TraceBeingWritten& traces, const std::function<bool()>& keep_going,
                   bool own_interrupt);

}  // namespace memstage::harness
