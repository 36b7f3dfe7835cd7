// A realistic Report built by hand for the renderers' tests: nested stages (one with a
// hostile name), a timeline, a few hundred symbolized stacks, leaks, two processes.
#pragma once

#include <cstddef>
#include <string>

#include "reports/model/report_model.h"

namespace memstage::tests {

// The stage name every renderer must show as text, never as markup.
inline const std::string kHostileStageName = "</script><img src=x onerror=alert(1)>";
// A function name with characters HTML cares about, plus U+2028 (a JS line terminator).
inline const std::string kAwkwardFunctionName = "Matrix<float, Pool<float>>::operator&=(a && b)\u2028";

struct FixtureOptions {
  size_t stack_count = 300;       // distinct stacks
  size_t timeline_points = 600;
  unsigned seed = 42;
};

// `leak_a` leaks most, `leak_b` less; the densifying stack holds most memory at the peak.
reports::Report make_fixture_report(const FixtureOptions& options = {});

// A long run's tail: after the fixture's run, `batches` batches of 1 ms, each a stage
// "serve_batch" with a nested "forward", each with its stack figures, a timeline point
// and a leak: what a service that marks every request adds per request.
void add_loop_stages(reports::Report& report, size_t batches);

}  // namespace memstage::tests
