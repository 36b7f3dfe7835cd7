#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "profiler/trace/trace_reader.h"
#include "tests/unit/trace_builder.h"

using memstage::testing::TraceBuilder;
using memstage::testing::write_bytes;
namespace trace = memstage::trace;

namespace {

struct Counting : trace::TraceVisitor {
  int allocs = 0, frees = 0, stack_nodes = 0, ends = 0;
  uint32_t last_info = 99;  // the last allocation info seen
  void on_alloc(uint32_t info, bool) override {
    ++allocs;
    last_info = info;
  }
  void on_free(uint32_t info, bool) override {
    ++frees;
    last_info = info;
  }
  void on_stack_node(uint32_t, uint32_t, uint64_t) override { ++stack_nodes; }
  void on_end(uint64_t) override { ++ends; }
};

std::string temp_path(const std::string& name) {
  return memstage::testing::temp_trace_path(name);
}

// Three chunks: 2 allocations, 1 allocation + 1 free, end.
std::string three_chunk_trace() {
  TraceBuilder b;
  b.process().stack({0x1000, 0x2000}).alloc(0x7f0000001000, 100).alloc(0x7f0000002000, 200).chunk();
  b.alloc(0x7f0000003000, 300).free(0x7f0000001000).chunk();
  b.end(5).chunk();
  return b.bytes();
}

}  // namespace

TEST_CASE("reads every record of a whole trace in order") {
  const std::string path = temp_path("whole.mst");
  write_bytes(path, three_chunk_trace());
  Counting v;
  const auto summary = trace::read_trace(path, v);
  CHECK(summary.chunks == 3);
  CHECK_FALSE(summary.truncated);
  CHECK(summary.ended_cleanly);
  CHECK(v.allocs == 3);
  CHECK(v.frees == 1);
  CHECK(v.last_info == 0);  // the free names the first block's info, (100 bytes, stack 0)
  CHECK(v.stack_nodes == 2);  // one stack of two frames
}

TEST_CASE("a trace cut anywhere is read up to its last complete chunk") {
  const std::string whole = three_chunk_trace();
  const std::string path = temp_path("cut.mst");
  Counting full;
  write_bytes(path, whole);
  std::vector<uint64_t> chunk_ends{sizeof(trace::FileHeader)};
  trace::read_trace(path, full, [&](uint64_t done, uint64_t) { chunk_ends.push_back(done); });
  // Every cut point: never a crash or exception, never more than the whole, and a
  // cut inside the file is reported as truncated.
  for (size_t cut = sizeof(trace::FileHeader); cut < whole.size(); ++cut) {
    write_bytes(path, whole.substr(0, cut));
    Counting v;
    const auto summary = trace::read_trace(path, v);
    INFO("cut at " << cut);
    CHECK(v.allocs <= full.allocs);
    CHECK(summary.ended_cleanly == false);
    const bool at_chunk_end = std::find(chunk_ends.begin(), chunk_ends.end(), cut) != chunk_ends.end();
    CHECK(summary.truncated == !at_chunk_end);
  }
}

TEST_CASE("a corrupt byte anywhere: never a crash, never more than the whole, a reason for what was lost") {
  const std::string whole = three_chunk_trace();
  const std::string path = temp_path("corrupt.mst");
  for (size_t i = sizeof(trace::FileHeader); i < whole.size(); i += 3) {
    std::string bad = whole;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    write_bytes(path, bad);
    Counting v;
    INFO("flipped byte " << i);
    const auto summary = trace::read_trace(path, v);
    CHECK(v.allocs <= 3);
    if (summary.truncated) CHECK_FALSE(summary.truncation.empty());
    for (const auto& span : summary.damage.spans) CHECK_FALSE(span.why.empty());
  }
}

namespace {

// Every record that names or defines an id, as a line: what a skipped chunk changes.
struct Ids : trace::TraceVisitor {
  std::vector<std::string> lines;
  void add(std::string line) { lines.push_back(std::move(line)); }
  void on_stage_name(uint32_t id, const std::string& name) override { add("name " + std::to_string(id) + " " + name); }
  void on_stage_begin(uint32_t name_id, uint64_t) override { add("begin " + std::to_string(name_id)); }
  void on_stage_end(uint64_t) override { add("end"); }
  void on_stack_node(uint32_t id, uint32_t parent, uint64_t address) override {
    std::ostringstream line;
    line << "node " << id << " " << parent << " " << std::hex << address;
    add(line.str());
  }
  void on_alloc_info(uint32_t id, uint64_t size, uint32_t stack, int32_t stage) override {
    add("info " + std::to_string(id) + " " + std::to_string(size) + " " + std::to_string(stack) + " " +
        std::to_string(stage));
  }
  void on_alloc(uint32_t info, bool) override { add("alloc " + std::to_string(info)); }
  void on_free(uint32_t info, bool) override { add("free " + std::to_string(info)); }
};

// Three chunks; the second defines a stage name, stack nodes, allocation infos and stage
// instances that the third names, or builds on.
TraceBuilder three_chunks_of_definitions(uint32_t version = trace::kFormatVersion) {
  TraceBuilder b(version);
  b.process().stage_name("load").stage_begin(0, 1).stack({0x1000, 0x2000}).alloc(0xa000, 100, 0).chunk();
  b.stage_name("lost").stack({0x3000, 0x2000}).stack({0x4000}).alloc(0xb000, 200, 1);
  b.stage_end(2).stage_begin(0, 3).stage_end(4).stage_begin(1, 5).alloc(0xc000, 300, 2).chunk();
  b.stack({0x5000, 0x3000, 0x2000}).stack({0x6000, 0x1000, 0x2000}).alloc(0xd000, 400, 4);
  b.free(0xb000).free(0xa000).stage_end(6).stage_name("after").stage_begin(2, 7).end(8);
  return b;
}

// Where each chunk of `bytes` ends.
std::vector<uint64_t> chunk_ends(const std::string& bytes) {
  const std::string path = temp_path("chunk_ends.mst");
  write_bytes(path, bytes);
  Counting v;
  std::vector<uint64_t> ends{sizeof(trace::FileHeader)};
  trace::read_trace(path, v, [&](uint64_t done, uint64_t) { ends.push_back(done); });
  return ends;
}

}  // namespace

TEST_CASE("a damaged middle chunk is skipped, and the later chunks' ids keep their meaning") {
  const std::string whole = three_chunks_of_definitions().bytes();
  const std::vector<uint64_t> ends = chunk_ends(whole);
  REQUIRE(ends.size() == 4);
  const std::string lost = trace::kLostInDamagedChunk;
  for (const uint64_t flipped : {ends[1], ends[1] + 13, (ends[1] + ends[2]) / 2, ends[2] - 1}) {
    INFO("flipped byte " << flipped << " of the chunk at " << ends[1] << " to " << ends[2]);
    std::string bad = whole;
    bad[flipped] = static_cast<char>(bad[flipped] ^ 0x20);
    const std::string path = temp_path("damaged_middle.mst");
    write_bytes(path, bad);
    Ids v;
    const trace::ReadSummary summary = trace::read_trace(path, v);
    CHECK_FALSE(summary.truncated);
    CHECK(summary.ended_cleanly);
    CHECK(summary.chunks == 2);
    REQUIRE(summary.damage.spans.size() == 1);
    CHECK(summary.damage.spans[0].offset == ends[1]);
    CHECK(summary.damage.spans[0].bytes == ends[2] - ends[1]);
    CHECK(summary.damage.skipped_bytes() == ends[2] - ends[1]);
    CHECK(summary.damage.stack_nodes == 3);  // nodes 3 and 4, and node 5 below node 3
    CHECK(summary.damage.alloc_infos == 2);
    CHECK(summary.damage.stage_names == 1);
    CHECK(summary.damage.stage_instances == 2);
    CHECK(summary.damage.events_left_out == 1);  // the free of the block of lost info 1
    std::ostringstream hex;
    hex << std::hex << trace::kLostFrameAddress;
    const std::string lost_node = hex.str();
    const std::vector<std::string> want{
        "name 0 load", "begin 0", "node 1 0 2000", "node 2 1 1000", "info 0 100 2 0", "alloc 0",
        // Where the damaged chunk was: its name and nodes as stand-ins; "load" (instance 0)
        // ends, instance 1, begun and ended in it, takes the lost name, "lost" (2) stays open.
        "name 1 " + lost, "node 3 0 " + lost_node, "node 4 0 " + lost_node, "end", "name 2 " + lost, "begin 2",
        "end", "begin 1",
        // The next chunk: node 5, under lost node 3, is lost; node 6, under node 2, is known.
        "node 5 0 " + lost_node, "node 6 2 6000", "info 3 400 6 2", "alloc 3", "free 0", "end", "name 3 after",
        "begin 3"};
    CHECK(v.lines == want);
  }
}

namespace {

// Ids that keeps every stack node's address itself, as the analysis's stack tree does: the
// reader asks it for a parent's address and keeps none of its own.
struct IdsKeepingAddresses : Ids {
  std::vector<uint64_t> addresses{0};  // node 0: the empty stack
  void on_stack_node(uint32_t id, uint32_t parent, uint64_t address) override {
    Ids::on_stack_node(id, parent, address);
    addresses.push_back(address);
  }
  bool keeps_stack_node_addresses() const override { return true; }
  uint64_t stack_node_address(uint32_t id) const override { return addresses.at(id); }
};

}  // namespace

TEST_CASE("a visitor that keeps the stack nodes' addresses is asked for them: the same records, damaged or not") {
  const std::string whole = three_chunks_of_definitions().bytes();
  const std::vector<uint64_t> ends = chunk_ends(whole);
  REQUIRE(ends.size() == 4);
  std::string damaged = whole;
  damaged[ends[1] + 13] = static_cast<char>(damaged[ends[1] + 13] ^ 0x20);
  for (const std::string& bytes : {whole, damaged}) {
    const std::string path = temp_path("keeps_addresses.mst");
    write_bytes(path, bytes);
    Ids own;
    IdsKeepingAddresses kept;
    trace::read_trace(path, own);
    trace::read_trace(path, kept);
    CHECK(kept.lines == own.lines);
    CHECK(kept.addresses.size() == 7);  // nodes 1 to 6 and the empty stack
  }
}

TEST_CASE("a damaged first chunk, which holds the process record, ends the trace there") {
  const std::string whole = three_chunks_of_definitions().bytes();
  const std::vector<uint64_t> ends = chunk_ends(whole);
  std::string bad = whole;
  bad[ends[0] + 20] = static_cast<char>(bad[ends[0] + 20] ^ 0x20);
  const std::string path = temp_path("damaged_first.mst");
  write_bytes(path, bad);
  Ids v;
  const trace::ReadSummary summary = trace::read_trace(path, v);
  CHECK(summary.truncated);
  CHECK(summary.damage.spans.empty());
  CHECK(summary.chunks == 0);
  CHECK(v.lines.empty());
}

TEST_CASE("before version 4 a damaged chunk still ends the trace there") {
  const std::string whole = three_chunks_of_definitions(3).bytes();
  const std::vector<uint64_t> ends = chunk_ends(whole);
  REQUIRE(ends.size() == 4);
  std::string bad = whole;
  bad[ends[1] + 13] = static_cast<char>(bad[ends[1] + 13] ^ 0x20);
  const std::string path = temp_path("damaged_v3.mst");
  write_bytes(path, bad);
  Ids v;
  const trace::ReadSummary summary = trace::read_trace(path, v);
  CHECK(summary.truncated);
  CHECK(summary.truncation.find("at byte " + std::to_string(ends[1])) != std::string::npos);
  CHECK(summary.damage.spans.empty());
  CHECK(summary.chunks == 1);
}

TEST_CASE("a chunk whose start says records before it were never written is read on from") {
  TraceBuilder first;
  first.process().stack({0x10});  // node 1
  TraceBuilder more;
  more.process().stack({0x10}).stack({0x20}).chunk();  // nodes 1 and 2: the next chunk starts at 3
  more.alloc(0x1000, 8, 1).end(1);
  const std::string more_bytes = more.bytes();
  const std::string path = temp_path("chunk_start_ahead.mst");
  write_bytes(path, first.bytes() + more_bytes.substr(chunk_ends(more_bytes)[1]));
  Ids v;
  const auto summary = trace::read_trace(path, v);
  CHECK_FALSE(summary.truncated);
  CHECK(summary.ended_cleanly);
  REQUIRE(summary.damage.spans.size() == 1);
  CHECK(summary.damage.spans[0].bytes == 0);
  CHECK(summary.damage.stack_nodes == 1);
  std::ostringstream lost_node;
  lost_node << "node 2 0 " << std::hex << trace::kLostFrameAddress;
  CHECK(v.lines == std::vector<std::string>{"node 1 0 10", lost_node.str(), "info 0 8 2 -1", "alloc 0"});
}

TEST_CASE("a chunk start that does not match the records before it is corruption") {
  TraceBuilder first;
  first.process().stack({0x10});  // node 1: the next chunk starts at node 2
  TraceBuilder other;
  other.process().chunk();
  other.end(1);  // in a chunk that starts at node 1
  const std::string other_bytes = other.bytes();
  const std::string path = temp_path("chunk_start_mismatch.mst");
  write_bytes(path, first.bytes() + other_bytes.substr(chunk_ends(other_bytes)[1]));
  Counting v;
  const auto summary = trace::read_trace(path, v);
  CHECK(summary.truncated);
  CHECK(summary.truncation.find("does not match") != std::string::npos);
  CHECK(v.ends == 0);
}

namespace {
// What version 6 adds: each info's call and alignment, each allocation event's thread.
struct CallsAndThreads : trace::TraceVisitor {
  std::vector<std::pair<trace::AllocCall, uint8_t>> calls;  // by info
  std::vector<uint32_t> alloc_threads;                     // by allocation, in order
  uint32_t thread = 0;
  void on_alloc_call(uint32_t info, trace::AllocCall call, uint8_t align_log2) override {
    if (calls.size() <= info) calls.resize(info + 1);
    calls[info] = {call, align_log2};
  }
  void on_thread(uint32_t t) override { thread = t; }
  void on_alloc(uint32_t, bool) override { alloc_threads.push_back(thread); }
};
}  // namespace

TEST_CASE("version 6: each allocation info's call and alignment, each allocation's thread; refused before") {
  TraceBuilder b;
  b.process().stack({0x1000});
  b.thread(3).call(trace::AllocCall::kCalloc).alloc(0xa0, 100);
  b.thread(5).call(trace::AllocCall::kNew, 6).alloc(0xb0, 100).chunk();
  b.alloc(0xc0, 100).end(5);  // a new chunk: the thread is as the last kThread said
  const std::string path = temp_path("v6.mst");
  write_bytes(path, b.bytes());
  CallsAndThreads v;
  const auto summary = trace::read_trace(path, v);
  CHECK(summary.damage.spans.empty());
  REQUIRE(v.calls.size() == 2);  // 0xa0's info and 0xb0's: one size and stack, two calls
  CHECK(v.calls[0] == std::make_pair(trace::AllocCall::kCalloc, uint8_t{0}));
  CHECK(v.calls[1] == std::make_pair(trace::AllocCall::kNew, uint8_t{6}));
  CHECK(v.alloc_threads == std::vector<uint32_t>{3, 5, 5});

  TraceBuilder old(5);  // a thread record where version 5 has none: corruption
  old.process().stack({0x1000}).chunk();
  old.thread(1).alloc(0xa0, 100).chunk();
  old.end(5);
  write_bytes(path, old.bytes());
  CallsAndThreads v5;
  const auto summary5 = trace::read_trace(path, v5);
  CHECK(!summary5.damage.spans.empty());
  CHECK(v5.alloc_threads.empty());
  std::remove(path.c_str());
}

namespace {

// Aggregate mode's records as lines, in the order the visitor is handed them, site runs
// batched or not (TraceVisitor::on_agg_sites).
struct AggLines : trace::TraceVisitor {
  std::vector<std::string> lines;
  size_t batches = 0;
  void on_agg_sites(std::span<const trace::AggSiteRecord> sites) override {
    ++batches;
    trace::TraceVisitor::on_agg_sites(sites);
  }
  void on_agg_site(const trace::AggSiteRecord& r) override {
    lines.push_back("site " + std::to_string(r.stack) + " " + std::to_string(r.stage) + " " + std::to_string(r.live_bytes));
  }
  void on_agg_snapshot(const trace::AggSnapshotRecord& r) override { lines.push_back("snapshot " + std::to_string(r.t_ns)); }
  void on_stage_begin(uint32_t, uint64_t t) override { lines.push_back("begin " + std::to_string(t)); }
};

}  // namespace

TEST_CASE("aggregate mode's site records reach the visitor in the trace's order, in runs or one by one") {
  TraceBuilder b;
  b.process(100, trace::Mode::kAggregate).stack({0x10}).stage_name("s");
  const auto stack = static_cast<uint32_t>(b.stack_node(0));
  std::vector<std::string> expected;
  const auto site = [&](int32_t stage, uint64_t live) {
    b.record(trace::records::AggSite{stack, static_cast<uint64_t>(stage + 1), 1, live, 0, live, 1});
    expected.push_back("site " + std::to_string(stack) + " " + std::to_string(stage) + " " + std::to_string(live));
  };
  for (uint64_t i = 1; i <= 150; ++i) site(-1, i);  // past a batch's length, twice
  b.record(trace::records::AggSnapshot{1000, 150, 0, 0, 0});
  expected.push_back("snapshot 1000");
  site(-1, 500);
  b.stage_begin(0, 1500);
  expected.push_back("begin 1500");
  site(0, 600);
  b.chunk();
  for (uint64_t i = 1; i <= 3; ++i) site(0, 700 + i);  // a run that ends with its chunk
  b.chunk();
  site(0, 800);
  b.record(trace::records::AggSnapshot{2000, 0, 0, 0, 0});
  expected.push_back("snapshot 2000");
  b.end(3000);

  const std::string path = temp_path("agg_sites.mst");
  b.write(path);
  AggLines v;
  trace::read_trace(path, v);
  CHECK(v.lines == expected);
  CHECK(v.batches < 150);  // handed over in runs
}

TEST_CASE("a damaged record in a run of site records: the sites before it are read, as before batching") {
  TraceBuilder b;
  b.process(100, trace::Mode::kAggregate).stack({0x10});
  const auto stack = static_cast<uint32_t>(b.stack_node(0));
  b.chunk();
  for (uint64_t i = 1; i <= 10; ++i) b.record(trace::records::AggSite{stack, 0, 1, i, 0, i, 1});
  b.record(trace::records::AggSite{stack + 1000, 0, 1, 99, 0, 99, 1});  // a stack never defined
  b.record(trace::records::AggSite{stack, 0, 1, 11, 0, 11, 1});
  b.chunk();
  b.record(trace::records::AggSite{stack, 0, 1, 12, 0, 12, 1});
  b.end(3000);

  const std::string path = temp_path("agg_sites_damaged.mst");
  b.write(path);
  AggLines v;
  const auto summary = trace::read_trace(path, v);
  CHECK_FALSE(summary.damage.spans.empty());
  std::vector<std::string> expected;
  for (uint64_t i = 1; i <= 10; ++i) expected.push_back("site " + std::to_string(stack) + " -1 " + std::to_string(i));
  expected.push_back("site " + std::to_string(stack) + " -1 12");  // the next chunk, read on
  CHECK(v.lines == expected);
}
