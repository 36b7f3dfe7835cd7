// The analysis's stack tree (reports/analysis/stack_tree.h) and the stacks the report
// resolves from it.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "reports/analysis/analyzer.h"
#include "profiler/trace/block_vector.h"
#include "reports/analysis/stack_resolver.h"
#include "reports/analysis/stack_tree.h"
#include "reports/model/stack_interner.h"
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

TEST_CASE("block vector: elements pushed across blocks keep their index and value") {
  memstage::trace::BlockVector<uint64_t, 4> small;  // blocks of 4: every fifth push opens one
  CHECK(small.empty());
  for (uint64_t i = 0; i < 1000; ++i) small.push_back(i * 3 + 1);
  REQUIRE(small.size() == 1000);
  bool all = true;
  for (uint64_t i = 0; i < 1000; ++i) all = all && small[i] == i * 3 + 1;
  CHECK(all);
  small[999] = 7;
  CHECK(small[999] == 7);
  CHECK(small[998] == 998 * 3 + 1);
}

TEST_CASE("block vector: the first block grows to the block's size, keeping what it holds") {
  // Blocks of 1024: the first starts at 64 and doubles four times before the second opens.
  memstage::trace::BlockVector<uint64_t, 1024> v;
  v.push_back(uint64_t{5});
  for (uint64_t i = 1; i < 3000; ++i) {
    // Every 7th element a copy of one already in: pushed while the first block moves.
    if (i % 7 == 0) {
      v.push_back(v[i / 7]);
    } else {
      v.push_back(i);
    }
  }
  REQUIRE(v.size() == 3000);
  std::vector<uint64_t> expected{5};
  for (uint64_t i = 1; i < 3000; ++i) expected.push_back(i % 7 == 0 ? expected[i / 7] : i);
  bool all = true;
  for (uint64_t i = 0; i < 3000; ++i) all = all && v[i] == expected[i];
  CHECK(all);
}

TEST_CASE("block vector: grown for overwrite, every index written then read back, and pushed after") {
  const size_t n = GENERATE(size_t{3}, size_t{64}, size_t{1000}, size_t{4097});  // within, at, past the first block
  memstage::trace::BlockVector<uint64_t, 1024> v;
  v.grow_for_overwrite_to(n);
  REQUIRE(v.size() == n);
  for (size_t i = 0; i < n; ++i) v[i] = i * 5 + 2;
  v.grow_for_overwrite_to(n + 1500);  // across more blocks
  REQUIRE(v.size() == n + 1500);
  for (size_t i = n; i < n + 1500; ++i) v[i] = i * 5 + 2;
  v.push_back(uint64_t{9});
  REQUIRE(v.size() == n + 1501);
  bool all = true;
  for (size_t i = 0; i < n + 1500; ++i) all = all && v[i] == i * 5 + 2;
  CHECK(all);
  CHECK(v[n + 1500] == 9);
}

TEST_CASE("stack tree: a chain of nodes longer than its storage's blocks") {
  // 2e5 nodes: four of its blocks of 65,536.
  StackTree tree;
  constexpr uint32_t kNodes = 200'000;
  for (uint32_t id = 1; id <= kNodes; ++id) tree.add_node(id, id - 1, 0x1000 + id, 0);
  CHECK(tree.size() == kNodes + 1);
  bool all = true;
  for (uint32_t id : {1u, 65'535u, 65'536u, 65'537u, 131'072u, kNodes}) {
    all = all && addresses_of(tree, id).size() == id && tree.parent(id) == id - 1 && tree.return_address(id) == 0x1000 + id;
  }
  CHECK(all);
}

TEST_CASE("stack tree: version 2 nodes, their stacks and the module snapshot each was defined under") {
  StackTree tree;
  tree.add_node(1, 0, 0xa1, -1);  // before any module list
  tree.add_node(2, 1, 0xa2, 0);
  tree.add_node(3, 2, 0x11, 0);
  tree.add_node(4, 2, 0x12, 2);  // two module lists came in between
  tree.add_node(5, 1, 0xb2, 2);
  CHECK(addresses_of(tree, 3) == std::vector<uint64_t>{0x11, 0xa2, 0xa1});
  CHECK(addresses_of(tree, 4) == std::vector<uint64_t>{0x12, 0xa2, 0xa1});
  CHECK(addresses_of(tree, 0).empty());
  CHECK(addresses_of(tree, 5).size() == 2);
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

namespace {

// Stacks sharing callers at several depths, one the prefix of others, the empty one;
// leaks are listed (and their stacks resolved) largest first: the sizes interleave
// them so that each resolution starts from a different depth of the one before.
const std::vector<std::vector<uint64_t>> kStacks{
    {0x11, 0xa2, 0xa1}, {0x12, 0xa2, 0xa1}, {0x13, 0xb2, 0xa1}, {0xa2, 0xa1}, {0x14, 0x11, 0xa2, 0xa1},
    {0x15},             {},                 {0x16, 0x14, 0x11, 0xa2, 0xa1},    {0x17, 0xb2, 0xa1}};
const uint64_t kSizes[] = {700, 300, 900, 500, 100, 800, 200, 600, 400};

memstage::reports::Report analyze_stacks() {
  TraceBuilder builder;
  builder.process();
  for (const auto& s : kStacks) builder.stack(s);
  for (uint32_t i = 0; i < kStacks.size(); ++i) builder.alloc(0x1000 * (i + 1), kSizes[i], i);
  builder.end(1'000'000);
  const std::string path = memstage::testing::temp_trace_path("stack_tree.mst");
  builder.write(path);
  memstage::reports::AnalysisOptions options;
  options.symbolize = false;
  return memstage::reports::analyze({path}, std::nullopt, options);
}

// A resolver of a tree of (id, parent, address) nodes, without modules or symbols.
struct TreeResolver {
  explicit TreeResolver(std::initializer_list<std::tuple<uint32_t, uint32_t, uint64_t>> nodes) {
    for (const auto& [id, parent, address] : nodes) tree.add_node(id, parent, address, -1);
  }
  memstage::reports::StackTree tree;
  const std::vector<std::vector<memstage::trace::Module>> no_modules;
  const std::unordered_map<uint64_t, memstage::trace::PythonCode> no_python;
  memstage::reports::Report report;
  memstage::reports::StackResolver resolver{tree, no_modules, no_python, report, false};
};

std::vector<uint64_t> addresses_of(const memstage::reports::Report& r, memstage::reports::StackIndex stack) {
  std::vector<uint64_t> out;
  for (const auto f : r.frames_of(r.stacks.at(stack))) out.push_back(r.frames.at(f).address);
  return out;
}

}  // namespace

TEST_CASE("every stack of the report holds its trace stack's frames, whatever order they are resolved in") {
  const auto r = analyze_stacks();
  std::map<uint64_t, std::vector<uint64_t>> by_size;
  for (size_t i = 0; i < kStacks.size(); ++i) by_size[kSizes[i]] = kStacks[i];
  REQUIRE(r.leaks.size() == kStacks.size());
  for (const auto& leak : r.leaks) CHECK(addresses_of(r, leak.stack) == by_size.at(leak.bytes));
}

TEST_CASE("the report's stacks are a tree: frames that stacks share are stored once") {
  const auto r = analyze_stacks();
  // One node per distinct stack of callers: each stack's tails from every depth.
  std::set<std::vector<uint64_t>> tails;
  for (const auto& s : kStacks) {
    for (size_t i = 0; i < s.size(); ++i) tails.emplace(s.begin() + i, s.end());
  }
  CHECK(r.stack_nodes.size() == 1 + tails.size());  // and node 0, the empty stack
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (size_t n = 1; n < r.stack_nodes.size(); ++n) {
    CHECK(r.stack_nodes[n].caller < n);
    pairs.emplace(r.stack_nodes[n].caller, r.stack_nodes[n].frame);
  }
  CHECK(pairs.size() == r.stack_nodes.size() - 1);
  // 0xa2 0xa1 is one stack's whole and four others' callers.
  const auto stack_of_bytes = [&](uint64_t bytes) {
    for (const auto& leak : r.leaks) {
      if (leak.bytes == bytes) return r.stacks.at(leak.stack);
    }
    FAIL("no leak of " << bytes);
    return memstage::reports::Stack{};
  };
  const auto callers = stack_of_bytes(500).innermost;
  CHECK(r.stack_nodes[stack_of_bytes(700).innermost].caller == callers);
  CHECK(r.stack_nodes[stack_of_bytes(300).innermost].caller == callers);
  CHECK(r.stack_nodes[r.stack_nodes[stack_of_bytes(100).innermost].caller].caller == callers);
  CHECK(stack_of_bytes(200).innermost == 0);
}

TEST_CASE("stack resolver: each trace stack resolved once, a stack outside the tree as the empty one") {
  using namespace memstage::reports;
  TreeResolver t{{1, 0, 0xa1}, {2, 1, 0x11}};
  StackResolver& resolver = t.resolver;
  const Report& r = t.report;
  const StackIndex inner = resolver.index_of(2);
  CHECK(resolver.index_of(1) != inner);
  CHECK(resolver.index_of(2) == inner);  // once: the same index, no second stack
  // The reader refuses events naming a stack it never read; a damaged capture that got
  // past it still gets one stack per number, the empty one.
  const StackIndex outside = resolver.index_of(1u << 30);
  CHECK(resolver.index_of(1u << 30) == outside);
  CHECK(r.stacks.size() == 3);
  CHECK(r.stacks.at(outside).innermost == 0);
  std::vector<uint64_t> addresses;
  for (const auto f : r.frames_of(r.stacks.at(inner))) addresses.push_back(r.frames.at(f).address);
  CHECK(addresses == std::vector<uint64_t>{0x11, 0xa1});
}

TEST_CASE("stack resolver: after the tree is let go, the stacks resolved before keep their index") {
  using namespace memstage::reports;
  TreeResolver t{{1, 0, 0xa1}, {2, 1, 0x11}, {3, 1, 0x12}};
  StackResolver& resolver = t.resolver;
  const Report& r = t.report;
  const StackIndex inner = resolver.index_of(2);
  resolver.forget_tree();
  t.tree = StackTree();
  CHECK(resolver.index_of(2) == inner);
  CHECK(r.stacks.at(inner).innermost != 0);
  CHECK(r.stacks.at(resolver.index_of(1u << 30)).innermost == 0);  // outside the tree, as before
  CHECK_THROWS_AS(resolver.index_of(3), std::logic_error);  // in the tree, never resolved
}

TEST_CASE("stack resolver: module lists numbered past what a node marks: callers shared within a list, not across") {
  using namespace memstage::reports;
  // Nodes remember the list they were made in in 2 bytes: nodes of lists 70000 and 70001
  // are marked as made in another, looked at again each time. Node 1's address is libx's
  // in list 70000 and libz's in list 70001 (loaded where libx was).
  constexpr int kLateList = 70000;
  std::vector<std::vector<memstage::trace::Module>> lists(kLateList + 2);
  lists[kLateList] = {{"/lib/libx.so", 0, {{0x1000, 0x2000}}}};
  lists[kLateList + 1] = {{"/lib/libz.so", 0, {{0x1000, 0x2000}}}};
  StackTree tree;
  tree.add_node(1, 0, 0x1100, kLateList);
  tree.add_node(2, 1, 0x1200, kLateList);
  tree.add_node(3, 1, 0x1300, kLateList);
  tree.add_node(4, 1, 0x1400, kLateList + 1);
  const std::unordered_map<uint64_t, memstage::trace::PythonCode> no_python;
  Report r;
  StackResolver resolver(tree, lists, no_python, r, false);
  const StackIndex two = resolver.index_of(2), three = resolver.index_of(3), four = resolver.index_of(4);
  const auto modules_of = [&](StackIndex stack) {
    std::vector<std::string> out;
    for (const auto f : r.frames_of(r.stacks.at(stack))) out.push_back(r.frame(f).module);
    return out;
  };
  CHECK(addresses_of(r, two) == std::vector<uint64_t>{0x1200, 0x1100});
  CHECK(addresses_of(r, three) == std::vector<uint64_t>{0x1300, 0x1100});
  CHECK(modules_of(four) == std::vector<std::string>{"/lib/libz.so", "/lib/libz.so"});
  const auto caller_of = [&](StackIndex stack) { return r.stack_nodes.at(r.stacks.at(stack).innermost).caller; };
  CHECK(caller_of(three) == caller_of(two));
  CHECK(caller_of(four) != caller_of(two));
  CHECK(r.stack_nodes.size() == 1 + 3 + 2);  // the root, list 70000's three frames, list 70001's two
}

TEST_CASE("a stack's frames are those of its own module list, and shared with earlier stacks where they agree") {
  using memstage::trace::records::ModuleEntry;
  using memstage::trace::records::Modules;
  using memstage::trace::records::Segment;
  const auto modules_record = [](std::vector<ModuleEntry>& entries) {
    Modules m;
    m.modules.items = entries;
    return m;
  };
  const Segment low[] = {{0x1000, 0x2000}}, high[] = {{0x5000, 0x6000}};
  ModuleEntry libx, liby, libz;
  libx.path = "/lib/libx.so";
  libx.segments.items = low;
  liby.path = "/lib/liby.so";
  liby.segments.items = high;
  libz.path = "/lib/libz.so";  // loaded where libx was, after it was unloaded
  libz.segments.items = low;
  std::vector<ModuleEntry> first{libx}, second{libx, liby}, third{libz, liby}, fourth{libx, liby};
  TraceBuilder builder;
  builder.process();
  builder.record(modules_record(first)).stack({0x1100, 0x1010});
  builder.record(modules_record(second)).stack({0x5100, 0x1100, 0x1010});
  builder.record(modules_record(third)).stack({0x5200, 0x1100, 0x1010});
  // libx back where it was: its addresses' frames are those found under the first lists.
  builder.record(modules_record(fourth)).stack({0x5300, 0x1100, 0x1010});
  builder.alloc(0x100000, 300, 0).alloc(0x200000, 200, 1).alloc(0x300000, 100, 2).alloc(0x400000, 50, 3).end(1'000'000);
  const std::string path = memstage::testing::temp_trace_path("stack_tree_modules.mst");
  builder.write(path);
  memstage::reports::AnalysisOptions options;
  options.symbolize = false;
  const auto r = memstage::reports::analyze({path}, std::nullopt, options);
  REQUIRE(r.leaks.size() == 4);
  const auto modules_of = [&](const memstage::reports::Leak& leak) {
    std::vector<std::string> out;
    for (const auto f : r.frames_of(r.stacks.at(leak.stack))) out.push_back(r.frame(f).module);
    return out;
  };
  CHECK(modules_of(r.leaks[0]) == std::vector<std::string>{"/lib/libx.so", "/lib/libx.so"});
  CHECK(modules_of(r.leaks[1]) == std::vector<std::string>{"/lib/liby.so", "/lib/libx.so", "/lib/libx.so"});
  CHECK(modules_of(r.leaks[2]) == std::vector<std::string>{"/lib/liby.so", "/lib/libz.so", "/lib/libz.so"});
  CHECK(modules_of(r.leaks[3]) == std::vector<std::string>{"/lib/liby.so", "/lib/libx.so", "/lib/libx.so"});
  const auto frame_ids_of = [&](const memstage::reports::Leak& leak) {
    std::vector<memstage::reports::FrameIndex> out;
    for (const auto f : r.frames_of(r.stacks.at(leak.stack))) out.push_back(f);
    return out;
  };
  const auto fourth_frames = frame_ids_of(r.leaks[3]);
  CHECK(std::vector(fourth_frames.begin() + 1, fourth_frames.end()) == frame_ids_of(r.leaks[0]));
  // The second stack's callers are the first stack's nodes; the third's are its own.
  const auto& nodes = r.stack_nodes;
  CHECK(nodes[r.stacks.at(r.leaks[1].stack).innermost].caller == r.stacks.at(r.leaks[0].stack).innermost);
  // The fourth's are made anew (the nodes last made for them were libz's): the same frames.
  CHECK(nodes.size() == 1 + 2 + 1 + 3 + 3);
}

namespace {

// Each frame of a report stack as text: module, address, function, file and line.
std::vector<std::string> frames_text(const memstage::reports::Report& r, memstage::reports::StackIndex stack) {
  std::vector<std::string> out;
  for (const auto f : r.frames_of(r.stacks.at(stack))) {
    const auto& frame = r.frame(f);
    out.push_back(frame.module + "+" + std::to_string(frame.address) + " " + frame.function + " " + frame.file + ":" +
                  std::to_string(frame.line));
  }
  return out;
}

}  // namespace

TEST_CASE("stack resolver: resolved while the tree is read, frames not knowable yet wait; the stacks are a resolution's after") {
  using namespace memstage::reports;
  using memstage::trace::python_frame_address;
  const uint64_t code_read_late = python_frame_address(7, 12);
  std::vector<std::vector<memstage::trace::Module>> lists{{{"/lib/libx.so", 0, {{0x1000, 0x2000}}}}};
  std::unordered_map<uint64_t, memstage::trace::PythonCode> codes;
  StackTree tree;
  tree.add_node(1, 0, 0x1100, 0);
  tree.add_node(2, 1, 0x5100, 0);  // liby's, in the list that follows its definition
  tree.add_node(3, 2, 0x1200, 0);
  tree.add_node(4, 1, code_read_late, 0);
  Report scratch;
  StackResolver early(tree, lists, codes, scratch, false);
  early.resolve_while_read();
  early.resolve_read();
  // Stack 1 is made; 2 and 3 wait for liby's list, 4 for its code: none of them made.
  CHECK(scratch.stack_nodes.size() == 2);
  lists.push_back({{"/lib/libx.so", 0, {{0x1000, 0x2000}}}, {"/lib/liby.so", 0, {{0x5000, 0x6000}}}});
  tree.add_node(5, 1, 0x1300, 1);
  early.resolve_read();
  CHECK(scratch.stack_nodes.size() == 5);  // 2, 3 and 5 now; 4 still waits
  codes.emplace(7, memstage::trace::PythonCode{7, 10, "late.py", "read_late"});
  tree.add_node(6, 4, 0x1400, 1);
  Report report;
  early.move_to_report(report);  // the tree read whole: 4 and 6 resolved as pass two names them
  CHECK(scratch.frames.empty());
  Report whole;
  StackResolver after(tree, lists, codes, whole, false);
  for (uint32_t stack = 1; stack <= 6; ++stack) {
    INFO("stack " << stack);
    const StackIndex a = early.index_of(stack), b = after.index_of(stack);
    CHECK(frames_text(report, a) == frames_text(whole, b));
  }
  CHECK(frames_text(report, early.index_of(2)).front() == "/lib/liby.so+" + std::to_string(0x5100) + "  :0");
  CHECK(frames_text(report, early.index_of(4)).front() == "+0 read_late late.py:12");
  CHECK(report.stack_nodes.size() == whole.stack_nodes.size());
  CHECK(report.frames.size() == whole.frames.size());
  // Only into a report with no frames of its own.
  CHECK_THROWS_AS(StackResolver(tree, lists, codes, scratch, false).move_to_report(report), std::logic_error);
}

namespace {
// A frame added to `report`, by its function, whether it is allocator plumbing, and its kind.
memstage::reports::FrameIndex add_frame(memstage::reports::Report& report, const char* function, bool allocator,
                                        const char* kind = "native") {
  memstage::reports::Frame f;
  f.function = function;
  f.allocator = allocator;
  f.kind = kind;
  report.frames.push_back(f);
  return static_cast<memstage::reports::FrameIndex>(report.frames.size() - 1);
}
}  // namespace

TEST_CASE("report model: stacks made whole share their callers; the site is found walking from the innermost") {
  using namespace memstage::reports;
  Report r;
  const FrameIndex malloc_ = add_frame(r, "malloc", true), new_ = add_frame(r, "operator new", true),
                   site = add_frame(r, "site", false), main_ = add_frame(r, "main", false),
                   script = add_frame(r, "script.py", false, "python");
  StackInterner stacks(r.stack_nodes);
  const std::vector<FrameIndex> a{malloc_, new_, site, main_}, b{new_, site, main_}, c{malloc_, script, main_},
      plumbing{malloc_, new_};
  r.stacks = {stacks.stack(a), stacks.stack(b), stacks.stack(c), stacks.stack(plumbing), Stack{}};
  // main; site, main; new, site, main; malloc, new, site, main; script; malloc, script;
  // new; malloc, new.
  CHECK(r.stack_nodes.size() == 1 + 8);
  CHECK(r.stack_nodes[r.stacks[0].innermost].caller == r.stacks[1].innermost);
  const auto frames_of = [&](size_t i) {
    std::vector<FrameIndex> out;
    for (FrameIndex f : r.frames_of(r.stacks[i])) out.push_back(f);
    return out;
  };
  CHECK(frames_of(0) == a);
  CHECK(frames_of(2) == c);
  CHECK(frames_of(4).empty());
  CHECK(r.frames_of(r.stacks[0]).size() == 4);
  CHECK(program_frames(r, r.stacks[0]).front() == site);
  CHECK(program_frames(r, r.stacks[0]).size() == 2);
  CHECK(program_frames(r, r.stacks[3]).front() == malloc_);  // all plumbing: the whole stack
  FrameRoles roles(r);
  for (size_t i = 0; i < 4; ++i) CHECK(roles.allocation_site(r.stacks[i]) == allocation_site(r, r.stacks[i]));
  CHECK(allocation_site(r, r.stacks[0]) == site);
  CHECK(allocation_site(r, r.stacks[2]) == script);  // the script's line, in a Python program
  CHECK(allocation_site(r, r.stacks[3]) == malloc_);
  CHECK_FALSE(allocation_site(r, r.stacks[4]));
  // Indexing a model that has nodes already shares them.
  StackInterner again(r.stack_nodes);
  CHECK(again.stack(b).innermost == r.stacks[1].innermost);
  CHECK(r.stack_nodes.size() == 1 + 8);
}

TEST_CASE("report model: a stack's site is the same asked first or after stacks sharing its outer frames") {
  using namespace memstage::reports;
  Report r;
  const FrameIndex malloc_ = add_frame(r, "malloc", true), native = add_frame(r, "native", false),
                   call = add_frame(r, "call", false), outer_py = add_frame(r, "outer.py", false, "python"),
                   inner_py = add_frame(r, "inner.py", false, "python"), main_ = add_frame(r, "main", false);
  StackInterner stacks(r.stack_nodes);
  // Innermost first: Python frames outside native ones, inside them, none; sharing outer parts.
  const std::vector<std::vector<FrameIndex>> lists = {
      {malloc_, native, call, outer_py, main_}, {malloc_, call, outer_py, main_},
      {malloc_, native, inner_py, call, outer_py, main_}, {native, call, main_}, {malloc_, call, main_},
      {malloc_, main_}, {malloc_}, {outer_py, main_}};
  for (const auto& frames : lists) r.stacks.push_back(stacks.stack(frames));
  std::vector<std::optional<FrameIndex>> truth;
  for (const Stack& stack : r.stacks) truth.push_back(allocation_site(r, stack));
  CHECK(truth[0] == outer_py);
  CHECK(truth[2] == inner_py);
  CHECK(truth[3] == native);
  CHECK(truth[4] == call);
  CHECK(truth[6] == malloc_);
  // One FrameRoles asked in each order, its notes of earlier walks in use.
  FrameRoles forward(r), backward(r);
  for (size_t i = 0; i < r.stacks.size(); ++i) CHECK(forward.allocation_site(r.stacks[i]) == truth[i]);
  for (size_t i = r.stacks.size(); i-- > 0;) CHECK(backward.allocation_site(r.stacks[i]) == truth[i]);
  for (size_t i = 0; i < r.stacks.size(); ++i) CHECK(backward.allocation_site(r.stacks[i]) == truth[i]);
}
