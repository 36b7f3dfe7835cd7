// The page's call tree made of the stacks the analysis hands beside its last steps
// (AnalysisOptions::once_stacks_final, `memstage run`'s way) is the one the page makes itself.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <utility>

#include "reports/analysis/analyzer.h"
#include "reports/render/html/call_tree.h"
#include "reports/render/html/render_html.h"
#include "tests/unit/trace_builder.h"

using memstage::testing::TraceBuilder;
namespace reports = memstage::reports;
namespace trace = memstage::trace;

namespace {

struct Handed {
  int calls = 0;
  std::optional<reports::StacksCallTree> tree;
};

reports::Report analyze_handing_stacks(TraceBuilder& b, const std::string& name, Handed& handed) {
  const std::string path = memstage::testing::temp_trace_path("call_tree_" + name + ".mst");
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  options.once_stacks_final = [&handed](const reports::StackLists& lists) {
    ++handed.calls;
    handed.tree = reports::make_call_tree(lists);
  };
  return reports::analyze({path}, std::nullopt, options);
}

}  // namespace

TEST_CASE("the stacks handed beside the analysis's last steps make the page's own call tree") {
  TraceBuilder b;
  b.process().stack({0x10, 0x100}).stack({0x20, 0x100}).stack({0x30, 0x20, 0x100});
  b.time(1'000).alloc(0x1000, 100, 0).alloc(0x2000, 50, 1).alloc(0x3000, 70, 2).free(0x2000).end(2'000);
  Handed handed;
  const reports::Report r = analyze_handing_stacks(b, "full", handed);
  REQUIRE(handed.calls == 1);
  REQUIRE(handed.tree.has_value());
  CHECK(handed.tree->every_stack);
  REQUIRE(handed.tree->leaf_of_stack.size() == r.stacks.size());
  REQUIRE(r.stacks.size() >= 2);
  CHECK(reports::render_html(r, &*handed.tree) == reports::render_html(r));
  // The page takes the tree it is given: one whose stacks' leaves are swapped shows.
  reports::StacksCallTree swapped = *handed.tree;
  std::swap(swapped.leaf_of_stack.front(), swapped.leaf_of_stack.back());
  CHECK(reports::render_html(r, &swapped) != reports::render_html(r));
  // And not one made of other stacks than the report's.
  reports::StacksCallTree fewer = *handed.tree;
  fewer.leaf_of_stack.pop_back();
  CHECK(reports::render_html(r, &fewer) == reports::render_html(r));
}

TEST_CASE("stats mode names no stacks: nothing is handed beside the analysis") {
  TraceBuilder b;
  b.process(100, trace::Mode::kStats);
  b.record(trace::records::Counters{1, 0, 0, 0}).record(trace::records::Counters{2, 10, 5, 1000}).end(3);
  Handed handed;
  analyze_handing_stacks(b, "stats", handed);
  CHECK(handed.calls == 0);
}
