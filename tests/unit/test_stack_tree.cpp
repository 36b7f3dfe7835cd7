// The analysis's stack tree (reports/analysis/stack_tree.h) and the stacks the report
// resolves from it.
#include <catch2/catch.hpp>
#include <map>
#include <vector>

#include "reports/analysis/analyzer.h"
#include "reports/analysis/stack_tree.h"
#include "tests/unit/trace_builder.h"

using memstage::reports::StackTree;
using memstage::testing::TraceBuilder;

namespace {

std::vector<uint64_t> addresses_of(const StackTree& tree, uint32_t stack) {
  std::vector<uint64_t> out;
  for (uint32_t n = tree.node_of(stack); n != 0; n = tree.parent(n)) out.push_back(tree.return_address(n));
  return out;
}

}  // namespace

TEST_CASE("stack tree: version 2 nodes, depths and the module snapshot each was defined under") {
  StackTree tree;
  tree.add_node(1, 0, 0xa1, -1);  // before any module list
  tree.add_node(2, 1, 0xa2, 0);
  tree.add_node(3, 2, 0x11, 0);
  tree.add_node(4, 2, 0x12, 2);  // two module lists came in between
  tree.add_node(5, 1, 0xb2, 2);
  CHECK(addresses_of(tree, 3) == std::vector<uint64_t>{0x11, 0xa2, 0xa1});
  CHECK(addresses_of(tree, 4) == std::vector<uint64_t>{0x12, 0xa2, 0xa1});
  CHECK(addresses_of(tree, 0).empty());
  CHECK(tree.depth(0) == 0);
  CHECK(tree.depth(3) == 3);
  CHECK(tree.depth(5) == 2);
  CHECK(tree.parent(3) == tree.parent(4));  // the shared frames are one node
  CHECK(tree.snapshot_of(0) == -1);
  CHECK(tree.snapshot_of(1) == -1);
  CHECK(tree.snapshot_of(3) == 0);
  CHECK(tree.snapshot_of(4) == 2);
  CHECK(tree.snapshot_of(5) == 2);
  CHECK(tree.contains(5));
  CHECK_FALSE(tree.contains(6));
  CHECK_THROWS(tree.add_node(7, 0, 0x1, 2));  // not the next id
}

TEST_CASE("stack tree: version 1 whole stacks are interned, shared frames stored once") {
  StackTree tree;
  const std::vector<uint64_t> a{0x11, 0xa2, 0xa1}, b{0x12, 0xa2, 0xa1}, c{0xa2, 0xa1};
  tree.add_stack(0, a, 0);
  tree.add_stack(1, b, 1);
  tree.add_stack(2, c, 1);
  tree.add_stack(3, {}, 1);
  CHECK(addresses_of(tree, 0) == a);
  CHECK(addresses_of(tree, 1) == b);
  CHECK(addresses_of(tree, 2) == c);
  CHECK(addresses_of(tree, 3).empty());
  CHECK(tree.parent(tree.node_of(0)) == tree.node_of(2));  // a's callers are stack c
  CHECK(tree.parent(tree.node_of(1)) == tree.node_of(2));
  CHECK(tree.node_of(3) == 0);
  CHECK(tree.snapshot_of(0) == 0);  // each stack's own, as read
  CHECK(tree.snapshot_of(2) == 1);
  CHECK(tree.contains(3));
  CHECK_FALSE(tree.contains(4));
}

TEST_CASE("every stack of the report holds its trace stack's frames, whatever order they are resolved in") {
  // Stacks sharing callers at several depths, one the prefix of others, the empty one;
  // leaks are listed (and their stacks resolved) largest first: the sizes interleave
  // them so that each resolution starts from a different depth of the one before.
  const std::vector<std::vector<uint64_t>> stacks{
      {0x11, 0xa2, 0xa1}, {0x12, 0xa2, 0xa1}, {0x13, 0xb2, 0xa1}, {0xa2, 0xa1}, {0x14, 0x11, 0xa2, 0xa1},
      {0x15},             {},                 {0x16, 0x14, 0x11, 0xa2, 0xa1},    {0x17, 0xb2, 0xa1}};
  const uint64_t sizes[] = {700, 300, 900, 500, 100, 800, 200, 600, 400};
  TraceBuilder builder;
  builder.process();
  for (const auto& s : stacks) builder.stack(s);
  for (uint32_t i = 0; i < stacks.size(); ++i) builder.alloc(0x1000 * (i + 1), sizes[i], i);
  builder.end(1'000'000);
  const std::string path = memstage::testing::temp_trace_path("stack_tree.mst");
  builder.write(path);
  memstage::reports::AnalysisOptions options;
  options.symbolize = false;
  const auto r = memstage::reports::analyze({path}, std::nullopt, options);
  std::map<uint64_t, std::vector<uint64_t>> by_size;
  for (size_t i = 0; i < stacks.size(); ++i) by_size[sizes[i]] = stacks[i];
  REQUIRE(r.leaks.size() == stacks.size());
  for (const auto& leak : r.leaks) {
    std::vector<uint64_t> resolved;
    for (const auto f : r.stacks.at(leak.stack).frames) resolved.push_back(r.frames.at(f).address);
    CHECK(resolved == by_size.at(leak.bytes));
  }
}
