// replay_ops.h: a full-mode trace made by the tests' trace builder, with known blocks,
// frees, a realloc chain, temporaries and stages, turned into the replayer's ops; the ops
// run here on paper give the trace's live bytes at every step, its peak and its end.
#include <catch2/catch.hpp>

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
  std::vector<replay::Op> ops;
};

OpsFile read_ops(const std::string& path) {
  OpsFile f;
  FILE* in = fopen(path.c_str(), "rb");
  REQUIRE(in);
  REQUIRE(fread(&f.header, sizeof(f.header), 1, in) == 1);
  f.ops.resize(f.header.ops);
  if (!f.ops.empty()) REQUIRE(fread(f.ops.data(), sizeof(replay::Op), f.ops.size(), in) == f.ops.size());
  fclose(in);
  return f;
}

// The heap the replayer would hold, op by op: (bytes live now, the highest).
struct PaperReplay {
  std::map<uint32_t, uint64_t> slots;
  uint64_t live_bytes = 0, peak_bytes = 0;
  int stage_depth = 0, stages_begun = 0;

  void run(const std::vector<replay::Op>& ops) {
    for (const replay::Op& op : ops) step(op);
  }
  void step(const replay::Op& op) {
    switch (op.kind) {
      case replay::OpKind::kMalloc:
        REQUIRE(slots.count(op.slot) == 0);  // a slot is free before it is taken again
        slots[op.slot] = op.value;
        live_bytes += op.value;
        break;
      case replay::OpKind::kRealloc:
        REQUIRE(slots.count(op.slot) == 1);
        live_bytes = live_bytes - slots[op.slot] + op.value;
        slots[op.slot] = op.value;
        break;
      case replay::OpKind::kFree:
        REQUIRE(slots.count(op.slot) == 1);
        live_bytes -= slots[op.slot];
        slots.erase(op.slot);
        break;
      case replay::OpKind::kStageBegin:
        ++stage_depth;
        ++stages_begun;
        break;
      case replay::OpKind::kStageEnd:
        --stage_depth;
        break;
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
  PaperReplay paper;
  paper.run(file.ops);
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
