#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "profiler/trace/trace_reader.h"
#include "tests/unit/trace_builder.h"

using memstage::testing::TraceBuilder;
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

void write_bytes(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
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

TEST_CASE("a corrupt byte stops the reader at that chunk, with a reason") {
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
  }
}

TEST_CASE("a file that is not a trace is refused by name") {
  const std::string path = temp_path("not_a_trace.txt");
  write_bytes(path, "hello, this is not a trace at all\n");
  Counting v;
  CHECK_THROWS_AS(trace::read_trace(path, v), trace::NotATraceError);
  CHECK_FALSE(trace::looks_like_trace(path));
  try {
    trace::read_trace(path, v);
  } catch (const trace::NotATraceError& e) {
    CHECK(std::string(e.what()).find("is not a memstage trace") != std::string::npos);
  }
}

TEST_CASE("an event naming an undefined stack is corruption, not a crash") {
  TraceBuilder b;
  b.process().alloc(0x1000, 10, 7).end(1);  // stack 7 was never defined
  const std::string path = temp_path("bad_stack.mst");
  write_bytes(path, b.bytes());
  Counting v;
  const auto summary = trace::read_trace(path, v);
  CHECK(summary.truncated);
  CHECK(v.allocs == 0);
}

TEST_CASE("records with lists and strings read back as the record table encodes them") {
  namespace records = trace::records;
  struct Seen : trace::TraceVisitor {
    trace::ProcessInfo info;
    std::vector<trace::Module> modules;
    std::map<uint32_t, std::pair<uint32_t, uint64_t>> nodes;  // id -> (parent, return address)
    std::vector<uint64_t> stack;  // the stack the allocation names, innermost frame first
    trace::PythonCode code;
    void on_process_info(const trace::ProcessInfo& i) override { info = i; }
    void on_modules(const std::vector<trace::Module>& m) override { modules = m; }
    void on_stack_node(uint32_t id, uint32_t parent, uint64_t address) override { nodes[id] = {parent, address}; }
    void on_alloc_info(uint32_t, uint64_t, uint32_t node, int32_t) override {
      for (; node != 0; node = nodes.at(node).first) stack.push_back(nodes.at(node).second);
    }
    void on_python_code(const trace::PythonCode& c) override { code = c; }
  };
  const records::Segment segments[] = {{0x1000, 0x2000}, {0x3000, 0x3800}};
  records::ModuleEntry module;
  module.path = "/lib/libx.so";
  module.load_bias = 0x400;
  module.segments.items = segments;
  records::Modules modules;
  modules.modules.items = {&module, 1};
  TraceBuilder b;
  // The stack's nodes reach the visitor before the record that names it.
  b.process(4242).record(modules).stack({0x7fff0000, 0x1000, 0x7fff0010}).alloc(0x5000, 16, 0);
  b.record(records::PythonCode{7, 12, "a.py", "f"}).end(1);
  const std::string path = temp_path("records.mst");
  write_bytes(path, b.bytes());
  Seen v;
  const auto summary = trace::read_trace(path, v);
  CHECK_FALSE(summary.truncated);
  CHECK(v.info.pid == 4242);
  CHECK(v.info.argv == std::vector<std::string>{"test"});
  CHECK(v.info.allocator == "glibc");
  REQUIRE(v.modules.size() == 1);
  CHECK(v.modules[0].path == "/lib/libx.so");
  CHECK(v.modules[0].load_bias == 0x400);
  REQUIRE(v.modules[0].segments.size() == 2);
  CHECK(v.modules[0].segments[1].end == 0x3800);
  CHECK(v.stack == std::vector<uint64_t>{0x7fff0000, 0x1000, 0x7fff0010});  // deltas both ways
  CHECK(v.code.id == 7);
  CHECK(v.code.function == "f");
}

TEST_CASE("an unknown record tag is corruption") {
  // The tag after the last known one, and one between known kinds (51: in attach's block,
  // unused).
  for (const uint8_t tag : {static_cast<uint8_t>(trace::records::kMaxTag + 1), uint8_t{51}}) {
    TraceBuilder b;
    b.process().chunk();
    std::string bytes = b.bytes();
    // A chunk of one byte: the tag.
    const uint8_t raw[] = {tag};
    std::vector<uint8_t> out(ZSTD_compressBound(1));
    const size_t n = ZSTD_compress(out.data(), out.size(), raw, 1, 1);
    trace::ChunkHeader h{trace::kChunkMagic, static_cast<uint32_t>(n), 1};
    bytes.append(reinterpret_cast<const char*>(&h), sizeof(h));
    bytes.append(reinterpret_cast<const char*>(out.data()), n);
    const std::string path = temp_path("unknown_tag.mst");
    write_bytes(path, bytes);
    Counting v;
    const auto summary = trace::read_trace(path, v);
    CHECK(summary.truncated);
    CHECK(summary.truncation.find("unknown record tag " + std::to_string(tag)) != std::string::npos);
  }
}

TEST_CASE("stages nested deeper, or named longer, than the tracer writes are corruption") {
  TraceBuilder deep;
  deep.process().stage_name("s");
  for (uint32_t i = 0; i < trace::kMaxStageDepth; ++i) deep.stage_begin(0, i);
  deep.stage_end(1).stage_begin(0, 2);  // back to the limit: still readable
  deep.chunk().stage_begin(0, 3).end(4);  // one deeper
  const std::string path = temp_path("deep.mst");
  write_bytes(path, deep.bytes());
  Counting v;
  auto summary = trace::read_trace(path, v);
  CHECK(summary.truncated);
  CHECK(summary.truncation.find("nested deeper") != std::string::npos);
  CHECK(summary.chunks == 1);

  TraceBuilder named;
  named.process().stage_name(std::string(trace::kMaxStageNameBytes, 'x')).chunk();
  named.stage_name(std::string(trace::kMaxStageNameBytes + 1, 'y')).end(1);
  write_bytes(path, named.bytes());
  summary = trace::read_trace(path, v);
  CHECK(summary.truncated);
  CHECK(summary.truncation.find("stage name longer") != std::string::npos);
  CHECK(summary.chunks == 1);
}

namespace {

// Appends `bytes` to `path` in pieces of `piece` bytes, each flushed, as a tracer's
// writer does while its process runs.
void append_in_pieces(const std::string& path, const std::string& bytes, size_t piece) {
  FILE* f = fopen(path.c_str(), "ab");
  for (size_t at = 0; at < bytes.size(); at += piece) {
    fwrite(bytes.data() + at, 1, std::min(piece, bytes.size() - at), f);
    fflush(f);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  fclose(f);
}

// Reads `path` into `v` while a thread writes `bytes` into it in pieces of `piece` bytes,
// waiting `linger_ms` before it says the writer ended.
trace::ReadSummary read_while_written(const std::string& path, const std::string& bytes, size_t piece,
                                      Counting& v, unsigned linger_ms = 0) {
  write_bytes(path, "");
  std::atomic<bool> writing{true};
  std::thread writer([&] {
    append_in_pieces(path, bytes, piece);
    std::this_thread::sleep_for(std::chrono::milliseconds(linger_ms));
    writing = false;
  });
  const trace::FollowWriter follow{[&] { return writing.load(); },
                                   [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }};
  const auto summary = trace::read_trace(path, v, {}, &follow);
  writer.join();
  return summary;
}

}  // namespace

TEST_CASE("a trace still being written is read as it grows, to the same records as the whole file") {
  const std::string whole = three_chunk_trace();
  const std::string path = temp_path("growing.mst");
  for (const size_t piece : {size_t{1}, size_t{7}, sizeof(trace::ChunkHeader), size_t{4096}}) {
    INFO("written " << piece << " bytes at a time");
    Counting v;
    const auto summary = read_while_written(path, whole, piece, v);
    // Every piece came while the reader waited: never a truncation, nothing missed.
    CHECK_FALSE(summary.truncated);
    CHECK(summary.ended_cleanly);
    CHECK(summary.chunks == 3);
    CHECK(summary.file_bytes == whole.size());
    CHECK(v.allocs == 3);
    CHECK(v.frees == 1);
    CHECK(v.stack_nodes == 2);
  }
}

TEST_CASE("a trace whose writer ended inside a chunk is truncated there, as a finished file") {
  const std::string whole = three_chunk_trace();
  const std::string path = temp_path("growing_cut.mst");
  const size_t cut = whole.size() - 3;  // inside the last chunk
  write_bytes(path, whole.substr(0, cut));
  Counting plain;
  const auto expected = trace::read_trace(path, plain);

  Counting v;
  const auto summary = read_while_written(path, whole.substr(0, cut), 5, v, 20);  // the reader waits inside the chunk
  CHECK(summary.truncated);
  CHECK(summary.truncation == expected.truncation);
  CHECK(summary.chunks == expected.chunks);
  CHECK(v.allocs == plain.allocs);
  CHECK(summary.file_bytes == cut);
}

TEST_CASE("a visitor that is done stops the reader after that chunk") {
  const std::string path = temp_path("done.mst");
  write_bytes(path, three_chunk_trace());
  struct DoneAfterTwo : Counting {
    bool done() const override { return allocs >= 2; }
  } v;
  const auto summary = trace::read_trace(path, v);
  CHECK(summary.chunks == 1);  // the first chunk holds two allocations
  CHECK(v.allocs == 2);
  CHECK(v.frees == 0);
  CHECK_FALSE(summary.ended_cleanly);
}
