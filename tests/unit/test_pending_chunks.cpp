// The chunks a killed process had encoded and not written (profiler/trace/pending_chunks.h):
// appended to its trace in their order, once, after its last whole chunk.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "profiler/trace/pending_chunks.h"
#include "profiler/trace/trace_reader.h"
#include "tests/unit/trace_builder.h"

namespace trace = memstage::trace;
using memstage::testing::TraceBuilder;

namespace {

struct RssTimes : trace::TraceVisitor {
  std::vector<uint64_t> t_ns;
  void on_rss(uint64_t t, uint64_t, uint64_t) override { t_ns.push_back(t); }
};

// The pid of a process that has ended and been waited for.
uint64_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return static_cast<uint64_t>(child);
}

// A trace of three chunks as the tracer writes them (process and RSS at 5 ns; RSS at 10; RSS
// at 20): its first chunk as a file, and the other two's records as the writer's buffers held them.
struct ThreeChunks {
  std::string file;                   // file header + the first chunk
  std::vector<std::string> raw;       // the records of chunks 1 and 2 (0-based), uncompressed
  std::vector<std::string> chunks;    // chunks 1 and 2 as written
  ThreeChunks() {
    TraceBuilder b;
    b.process().rss(5, 1 << 20, 0).chunk();
    b.rss(10, 1 << 20, 0).chunk();
    b.rss(20, 1 << 20, 0).chunk();
    const std::string whole = b.bytes();
    size_t offset = sizeof(trace::FileHeader);
    for (int i = 0; i < 3; ++i) {
      trace::ChunkHeader h{};
      memcpy(&h, whole.data() + offset, sizeof(h));
      const size_t end = offset + sizeof(h) + h.compressed_bytes;
      if (i == 0) {
        file = whole.substr(0, end);
      } else {
        std::string records(h.raw_bytes, '\0');
        ZSTD_decompress(records.data(), records.size(), whole.data() + offset + sizeof(h), h.compressed_bytes);
        raw.push_back(records);
        chunks.push_back(whole.substr(offset, end - offset));
      }
      offset = end;
    }
  }
};

// A pending file as the tracer leaves it: `chunks_written` chunks written, the trace then
// `written_bytes` long, and each buffer's chunk ordinal + 1 with its records.
struct PendingFile {
  static constexpr uint32_t kBufferBytes = 4096;
  std::vector<uint8_t> bytes = std::vector<uint8_t>(trace::pending_file_bytes(kBufferBytes));
  trace::PendingHeader& header() { return *reinterpret_cast<trace::PendingHeader*>(bytes.data()); }
  PendingFile(uint64_t pid, uint64_t written_bytes, uint64_t chunks_written) {
    header().magic = trace::kPendingMagic;
    header().buffer_bytes = kBufferBytes;
    header().pid = pid;
    header().written_bytes = written_bytes;
    header().chunks_written = chunks_written;
  }
  void buffer(int i, uint64_t chunk_plus_one, const std::string& records) {
    memcpy(bytes.data() + trace::kPendingHeaderBytes + i * kBufferBytes, records.data(), records.size());
    header().buffers[i].bytes = records.size();
    header().buffers[i].chunk_plus_one = chunk_plus_one;
  }
  // Beside the trace, or in /dev/shm where the tracer puts it first.
  void write(const std::string& trace_path, bool in_shared_memory = false) {
    char shared[4400];
    const bool shared_ok = in_shared_memory && trace::shared_memory_pending_path(trace_path.c_str(), shared, sizeof(shared));
    FILE* f = fopen(shared_ok ? shared : (trace_path + trace::kPendingSuffix).c_str(), "wb");
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
};

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = memstage::testing::temp_trace_path(name);
  memstage::testing::write_bytes(path, bytes);
  return path;
}

uint64_t file_bytes(const std::string& path) { return std::filesystem::file_size(path); }

}  // namespace

TEST_CASE("a dead process's unwritten chunks are appended in their order, its pending file removed", "[pending]") {
  const bool in_shared_memory = GENERATE(false, true);
  const ThreeChunks t;
  const std::string path = write_file("pending_dead.mst", t.file);
  PendingFile pending(dead_pid(), file_bytes(path), 1);
  pending.buffer(0, 3, t.raw[1]);  // the chunk being filled
  pending.buffer(1, 2, t.raw[0]);  // the chunk handed to the compressor before it
  pending.write(path, in_shared_memory);
  const trace::PendingDrain drained = trace::drain_pending_chunks(path);
  CHECK(drained.found);
  CHECK(drained.chunks == 2);
  char shared[4400];
  REQUIRE(trace::shared_memory_pending_path(path.c_str(), shared, sizeof(shared)));
  CHECK_FALSE(std::filesystem::exists(shared));
  CHECK_FALSE(std::filesystem::exists(path + trace::kPendingSuffix));
  RssTimes v;
  const auto summary = trace::read_trace(path, v);
  CHECK(summary.chunks == 3);
  CHECK_FALSE(summary.truncated);
  CHECK(v.t_ns == std::vector<uint64_t>{5, 10, 20});
}

TEST_CASE("a chunk written whole but not yet counted is kept, one cut by the kill written again", "[pending]") {
  for (const bool whole : {true, false}) {
    const ThreeChunks t;
    // What the dying process wrote of that chunk: all of it, or its first 7 bytes.
    const std::string path = write_file("pending_written.mst", t.file + t.chunks[0].substr(0, whole ? std::string::npos : 7));
    PendingFile pending(dead_pid(), t.file.size(), 1);
    pending.buffer(0, 2, t.raw[0]);
    pending.write(path);
    CHECK(trace::drain_pending_chunks(path).chunks == (whole ? 0 : 1));  // a whole one is kept as it is
    RssTimes v;
    const auto summary = trace::read_trace(path, v);
    CHECK(summary.chunks == 2);
    CHECK_FALSE(summary.truncated);
    CHECK(v.t_ns == std::vector<uint64_t>{5, 10});
  }
}

TEST_CASE("chunks already written, and a chunk after a gap, are not appended", "[pending]") {
  const ThreeChunks t;
  const std::string path = write_file("pending_gap.mst", t.file);
  PendingFile pending(dead_pid(), file_bytes(path), 1);
  pending.buffer(0, 1, t.raw[0]);  // as chunk 0: written already
  pending.buffer(1, 3, t.raw[1]);  // chunk 2, with chunk 1 lost: the rest would not read
  pending.write(path);
  CHECK(trace::drain_pending_chunks(path).chunks == 0);
  RssTimes v;
  CHECK(trace::read_trace(path, v).chunks == 1);
}

TEST_CASE("the pending file of a process still running is left alone", "[pending]") {
  const ThreeChunks t;
  const std::string path = write_file("pending_alive.mst", t.file);
  const uint64_t before = file_bytes(path);
  PendingFile pending(static_cast<uint64_t>(getpid()), before, 1);
  pending.buffer(0, 2, t.raw[0]);
  pending.write(path);
  const trace::PendingDrain drained = trace::drain_pending_chunks(path);
  CHECK(drained.owner_alive);
  CHECK(drained.chunks == 0);
  CHECK(file_bytes(path) == before);
  CHECK(std::filesystem::exists(path + trace::kPendingSuffix));
  std::filesystem::remove(path + trace::kPendingSuffix);
}
