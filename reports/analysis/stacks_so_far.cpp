#include "reports/analysis/stacks_so_far.h"

#include <algorithm>

#include <absl/container/flat_hash_map.h>

#include "reports/analysis/runtime_leaks.h"
#include "reports/analysis/sites.h"

namespace memstage::reports {
namespace {

// Live bytes and blocks per (trace stack, stage row), from the live heap's blocks and
// aggregate mode's sites.
absl::flat_hash_map<uint64_t, StackBytes> held_by_site(const FirstPass& pass, const StageRows& stage_rows) {
  absl::flat_hash_map<uint64_t, StackBytes> by_key;
  pass.for_each_held([&](uint32_t stack, int stage, uint64_t bytes, uint64_t blocks) {
    StackBytes& s = by_key[figure_key(stack, stage_rows.row_of(stage))];
    s.stack = stack;
    s.bytes += bytes;
    s.blocks += blocks;
  });
  return by_key;
}

}  // namespace

void add_every_stack_so_far(const FirstPass& pass, const StageRows& stage_rows, StackResolver& stacks,
                            const AnalysisOptions& options, Report& report) {
  stacks.place_tree();  // every site's stack is named: most of the tree
  RuntimeLeaks runtime(report, report.python.has_value() && !pass.python_codes.empty(), options.leak_suppressions);
  for (const auto& [key, held] : held_by_site(pass, stage_rows)) {
    const StackIndex stack = stacks.index_of(held.stack);
    const bool runtime_held = runtime.is_runtime(stack);
    report.leaks.push_back(Leak{held.bytes, held.blocks, stage_of_key(key), stack, runtime_held});
    // As the analysis of the traces so far counts them (its leaks step): held now.
    uint64_t& bytes = runtime_held ? report.runtime_held.bytes : report.totals.leaked_bytes;
    uint64_t& blocks = runtime_held ? report.runtime_held.blocks : report.totals.leaked_blocks;
    bytes += held.bytes;
    blocks += held.blocks;
  }
  std::sort(report.leaks.begin(), report.leaks.end(), [](const Leak& a, const Leak& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack != b.stack ? a.stack < b.stack : a.stage < b.stage;
  });
  // Every mode's site figures are the sites' (aggregate mode's counts still the pass's).
  report.stack_figures = pass.sites.by_row_so_far(
      pass.heap.infos(), [&](int stage) { return stage_rows.row_of(stage); }, pass.agg_site_counts());
  for (StackStageFigures& f : report.stack_figures) f.stack = stacks.index_of(f.stack);
}

}  // namespace memstage::reports
