// replay_ops.h: a full-mode trace made by the tests' trace builder, with known blocks,
// frees, a realloc chain, temporaries and stages, turned into the replayer's ops; the ops
// run here on paper give the trace's live bytes at every step, its peak and its end. With
// threads, the ops run on paper with each thread as far ahead as its waits let it: a free
// or realloc whose allocation another thread made that ran before it fails the test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <vector>

#include "harness/replay/replay_ops.h"
#include "tests/unit/trace_builder.h"

using namespace memstage;
using memstage::testing::TraceBuilder;
using memstage::testing::temp_trace_path;

namespace {

struct OpsFile {
  replay::OpsHeader header{};
  std::vector<std::vector<replay::Op>> streams;  // by thread
};

OpsFile read_ops(const std::string& path) {
  OpsFile f;
  FILE* in = fopen(path.c_str(), "rb");
  REQUIRE(in);
  REQUIRE(fread(&f.header, sizeof(f.header), 1, in) == 1);
  std::vector<uint64_t> counts(f.header.threads);
  REQUIRE(fread(counts.data(), sizeof(uint64_t), counts.size(), in) == counts.size());
  for (const uint64_t count : counts) {
    f.streams.emplace_back(count);
    if (count) REQUIRE(fread(f.streams.back().data(), sizeof(replay::Op), count, in) == count);
  }
  fclose(in);
  return f;
}

// The heap the replayer would hold, op by op: (bytes live now, the highest). Threads run
// as the replayer's may: each as far as its waits let it, the last thread first, so that an
// op the ops leave unordered against another thread's runs as early as it can.
struct PaperReplay {
  struct Block {
    uint64_t bytes;
    uint8_t call, align_log2;
  };
  std::map<uint32_t, Block> slots;
  uint64_t live_bytes = 0, peak_bytes = 0;
  int stage_depth = 0, stages_begun = 0;
  std::vector<replay::Op> frees;  // every kFree run, as run

  void run(const std::vector<std::vector<replay::Op>>& streams) {
    std::vector<size_t> done(streams.size(), 0);
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t t = streams.size(); t-- > 0;) {
        while (done[t] < streams[t].size() && ready(streams[t][done[t]], done)) {
          step(streams[t][done[t]++]);
          moved = true;
        }
      }
    }
    for (size_t t = 0; t < streams.size(); ++t) REQUIRE(done[t] == streams[t].size());  // no thread waits forever
  }
  static bool ready(const replay::Op& op, const std::vector<size_t>& done) {
    return op.kind != replay::OpKind::kWait || (op.slot < done.size() && done[op.slot] >= op.value);
  }
  void step(const replay::Op& op) {
    switch (op.kind) {
      case replay::OpKind::kMalloc:
        REQUIRE(slots.count(op.slot) == 0);  // a slot is free before it is taken again
        slots[op.slot] = Block{op.value, op.call, op.align_log2};
        live_bytes += op.value;
        break;
      case replay::OpKind::kRealloc:
        REQUIRE(slots.count(op.slot) == 1);  // allocated before, on whichever thread
        live_bytes = live_bytes - slots[op.slot].bytes + op.value;
        slots[op.slot] = Block{op.value, op.call, 0};
        break;
      case replay::OpKind::kFree:
        REQUIRE(slots.count(op.slot) == 1);
        CHECK(op.call == slots[op.slot].call);  // freed as its call's blocks are
        live_bytes -= slots[op.slot].bytes;
        slots.erase(op.slot);
        frees.push_back(op);
        break;
      case replay::OpKind::kStageBegin:
        ++stage_depth;
        ++stages_begun;
        break;
      case replay::OpKind::kStageEnd:
        --stage_depth;
        break;
      case replay::OpKind::kWait: break;
    }
    peak_bytes = std::max(peak_bytes, live_bytes);
  }
};

}  // namespace

TEST_CASE("replay ops: the trace's blocks, a realloc chain and temporaries, to the exact live bytes") {
  const std::string trace = temp_trace_path("replay_ops.mst");
  const std::string ops = temp_trace_path("replay_ops.ops");
  TraceBuilder b;
  b.process().stack({0x1000, 0x2000}).stack({0x3000});
  b.alloc(0xa0, 100, 0).alloc(0xb0, 200, 1);        // 300 live
  b.free(0xb0).alloc(0xc0, 400, 1, true);           // realloc 200 -> 400: 500
  b.free(0xc0).alloc(0xd0, 800, 1, true);           // and again -> 800: 900
  b.temporary(5000, 0);                             // 5,900 for an instant
  b.stage_name("batch").stage_begin(0, 10);
  b.alloc(0xe0, 64, 0).alloc(0xe8, 64, 0);          // two blocks of one info: 1,028
  b.free(0xe0);                                     // 964
  b.stage_end(20);
  b.free(0xa0);                                     // 864 at the end
  b.end(30).write(trace);

  const replay::ConversionSummary summary = replay::write_replay_ops(trace, ops);
  CHECK(summary.allocations == 5);  // 0xa0, 0xb0, the temporary, 0xe0 and 0xe8
  CHECK(summary.reallocs == 2);     // each a free and an allocation fused, the slot kept
  CHECK(summary.frees == 3);        // the temporary, 0xe0 and 0xa0
  CHECK(summary.unmatched_frees == 0);
  CHECK(summary.warnings.empty());

  const OpsFile file = read_ops(ops);
  CHECK(file.header.slots == summary.slots);
  CHECK(file.header.threads == 1);  // no kThread: one thread, as before version 6
  CHECK(summary.cross_thread_waits == 0);
  PaperReplay paper;
  paper.run(file.streams);
  CHECK(paper.peak_bytes == 5900);
  CHECK(paper.live_bytes == 864);
  CHECK(paper.slots.size() == 2);  // 0xd0 (the chain's end) and 0xe8 are live at the end
  CHECK(paper.stages_begun == 1);
  CHECK(paper.stage_depth == 0);
  std::remove(trace.c_str());
  std::remove(ops.c_str());
}

TEST_CASE("replay ops: a trace of another mode is refused, naming the mode that can be replayed") {
  const std::string trace = temp_trace_path("replay_sample.mst");
  const std::string ops = temp_trace_path("replay_sample.ops");
  TraceBuilder b;
  b.process(100, trace::Mode::kSample).end(1).write(trace);
  CHECK_THROWS_WITH(replay::write_replay_ops(trace, ops),
                    Catch::Contains("sample-mode trace") && Catch::Contains("--mode full"));
  std::remove(trace.c_str());
  std::remove(ops.c_str());
}

TEST_CASE("replay ops: a damaged trace is refused in one line; a truncated one replays up to its end") {
  const std::string trace = temp_trace_path("replay_damaged.mst");
  const std::string ops = temp_trace_path("replay_damaged.ops");
  TraceBuilder b;
  b.process().stack({0x1000}).alloc(0xa0, 100).chunk();
  for (uint64_t i = 0; i < 64; ++i) b.alloc(0x1000 + i * 16, 32 + i);
  b.chunk();
  b.free(0xa0).end(10);
  std::string bytes = b.bytes();
  // A byte in the middle chunk's payload: its checksum fails, the reader reads on from the last.
  const size_t second_chunk = bytes.find(std::string(reinterpret_cast<const char*>(&trace::kChunkMagic), 4), 100);
  REQUIRE(second_chunk != std::string::npos);
  std::string damaged = bytes;
  damaged[second_chunk + sizeof(trace::ChunkHeader) + 10] ^= 0x5a;
  memstage::testing::write_bytes(trace, damaged);
  CHECK_THROWS_WITH(replay::write_replay_ops(trace, ops),
                    Catch::Contains("is damaged") && !Catch::Contains("\n"));

  // The same trace cut inside its last chunk: what came before is a sequence of its own.
  memstage::testing::write_bytes(trace, bytes.substr(0, bytes.size() - 5));
  const replay::ConversionSummary summary = replay::write_replay_ops(trace, ops);
  CHECK(summary.allocations == 65);
  REQUIRE(summary.warnings.size() == 1);
  CHECK(summary.warnings[0].find("truncated") != std::string::npos);
  std::remove(trace.c_str());
  std::remove(ops.c_str());
}

namespace {
// The ops of a trace built by `b`, checked to be a sequence the paper replay runs through.
struct Converted {
  replay::ConversionSummary summary;
  OpsFile file;
};
Converted convert(TraceBuilder& b, const std::string& name) {
  const std::string trace = temp_trace_path(name + ".mst");
  const std::string ops = temp_trace_path(name + ".ops");
  b.end(100).write(trace);
  Converted c{replay::write_replay_ops(trace, ops), {}};
  c.file = read_ops(ops);
  std::remove(trace.c_str());
  std::remove(ops.c_str());
  return c;
}
size_t count_kind(const std::vector<replay::Op>& stream, replay::OpKind kind) {
  return static_cast<size_t>(std::count_if(stream.begin(), stream.end(), [kind](const replay::Op& op) { return op.kind == kind; }));
}
}  // namespace

TEST_CASE("replay ops: blocks freed by another thread wait for their allocation; exact live bytes at the end") {
  TraceBuilder b;
  b.process().stack({0x1000}).stack({0x2000}).call(trace::AllocCall::kMalloc);
  b.thread(7).alloc(0xa0, 100, 0).alloc(0xb0, 200, 0);  // thread 7: 300 live
  b.thread(9).free(0xa0).alloc(0xc0, 300, 1);           // thread 9 frees 7's block: 500
  b.stage_name("load").stage_begin(0, 10);
  b.thread(7).free(0xc0).alloc(0xd0, 400, 0);           // 7 frees 9's block, inside the stage: 600
  b.stage_end(20);
  b.thread(9).alloc(0xe0, 50, 1);                       // after the stage: 650
  const Converted c = convert(b, "replay_threads");
  CHECK(c.summary.threads == 2);
  CHECK(c.file.header.threads == 2);
  CHECK(c.summary.allocations == 5);
  CHECK(c.summary.frees == 2);
  REQUIRE(c.file.streams.size() == 2);
  CHECK(count_kind(c.file.streams[0], replay::OpKind::kMalloc) == 3);  // thread 7's: 0xa0, 0xb0, 0xd0
  CHECK(count_kind(c.file.streams[1], replay::OpKind::kMalloc) == 2);  // thread 9's: 0xc0, 0xe0
  CHECK(count_kind(c.file.streams[1], replay::OpKind::kWait) >= 1);   // its free of 0xa0 waits for thread 7
  CHECK(c.summary.cross_thread_waits >= 3);  // the two frees, and the stage's edges
  PaperReplay paper;
  paper.run(c.file.streams);
  CHECK(paper.live_bytes == 650);
  CHECK(paper.slots.size() == 3);  // 0xb0, 0xd0, 0xe0
  CHECK(paper.stages_begun == 1);
  CHECK(paper.stage_depth == 0);
}

TEST_CASE("replay ops: a realloc chain across threads keeps its slot and its order") {
  TraceBuilder b;
  b.process().stack({0x1000}).call(trace::AllocCall::kMalloc);
  b.thread(1).alloc(0xa0, 64);
  b.call(trace::AllocCall::kRealloc);
  b.thread(2).free(0xa0).alloc(0xb0, 4096, 0, true);   // grown by another thread: waits for the malloc
  b.free(0xb0).alloc(0xc0, 65536, 0, true);            // and again on the same thread
  b.thread(1).free(0xc0).alloc(0xd0, 32, 0, true);     // shrunk back on the first: waits for thread 2
  const Converted c = convert(b, "replay_realloc_chain");
  CHECK(c.summary.allocations == 1);
  CHECK(c.summary.reallocs == 3);
  CHECK(c.summary.slots == 1);  // one block all along
  REQUIRE(c.file.streams.size() == 2);
  CHECK(count_kind(c.file.streams[1], replay::OpKind::kRealloc) == 2);
  CHECK(count_kind(c.file.streams[1], replay::OpKind::kWait) == 1);
  CHECK(count_kind(c.file.streams[0], replay::OpKind::kWait) == 1);
  PaperReplay paper;
  paper.run(c.file.streams);
  CHECK(paper.peak_bytes == 65536);
  CHECK(paper.live_bytes == 32);
}

TEST_CASE("replay ops: each block made by its call with its alignment, and freed as its call's are") {
  TraceBuilder b;
  b.process().stack({0x1000});
  b.call(trace::AllocCall::kPosixMemalign, 6).alloc(0xa0, 1000);
  b.call(trace::AllocCall::kAlignedAlloc, 12).alloc(0xb0, 8192);
  b.call(trace::AllocCall::kNew, 7).alloc(0xc0, 1000);  // aligned new, same size and stack as 0xa0
  b.call(trace::AllocCall::kNewArray).alloc(0xd0, 24);
  b.call(trace::AllocCall::kCalloc).alloc(0xe0, 4096);
  b.free(0xa0).free(0xc0).free(0xd0);
  const Converted c = convert(b, "replay_aligned");
  REQUIRE(c.file.streams.size() == 1);
  std::vector<std::pair<uint8_t, uint8_t>> made;
  for (const replay::Op& op : c.file.streams[0]) {
    if (op.kind == replay::OpKind::kMalloc) made.emplace_back(op.call, op.align_log2);
  }
  using trace::AllocCall;
  const auto as = [](AllocCall call, uint8_t align_log2) { return std::make_pair(static_cast<uint8_t>(call), align_log2); };
  CHECK(made == std::vector{as(AllocCall::kPosixMemalign, 6), as(AllocCall::kAlignedAlloc, 12), as(AllocCall::kNew, 7),
                            as(AllocCall::kNewArray, 0), as(AllocCall::kCalloc, 0)});
  PaperReplay paper;
  paper.run(c.file.streams);  // checks each free's call against its block's
  REQUIRE(paper.frees.size() == 3);
  CHECK(paper.frees[1].call == static_cast<uint8_t>(AllocCall::kNew));
  CHECK(paper.frees[1].align_log2 == 7);
  CHECK(paper.live_bytes == 8192 + 4096);
}

TEST_CASE("replay ops: a thread runs no further ahead of the trace's order than the marks let it") {
  // A producer hands each block to a consumer, which frees it at once: one block live at a
  // time in the program. Without the marks the producer's stream holds no wait at all.
  TraceBuilder b;
  b.process().stack({0x1000}).call(trace::AllocCall::kMalloc);
  const uint64_t blocks = 10 * replay::kEpochEvents;
  for (uint64_t i = 0; i < blocks; ++i) b.thread(1).alloc(0x1000 + 16 * i, 100).thread(2).free(0x1000 + 16 * i);
  const Converted c = convert(b, "replay_epochs");
  REQUIRE(c.file.streams.size() == 2);
  CHECK(count_kind(c.file.streams[0], replay::OpKind::kWait) >= 9);  // the producer waits at the marks
  PaperReplay paper;
  paper.run(c.file.streams);  // the producer first, as far as it can
  CHECK(paper.live_bytes == 0);
  CHECK(paper.peak_bytes <= 100 * 2 * replay::kEpochEvents);
  CHECK(paper.peak_bytes >= 100 * replay::kEpochEvents / 4);  // it did run ahead, within the bound
}
