// libFuzzer target: the trace reader and the analysis on a hostile trace. The input is
// the records of the trace's chunks, uncompressed: a fuzzer mutating compressed bytes
// would rarely get past zstd's checksum. The first byte says how many chunks the records
// are cut into (the decoder's state carries over chunk boundaries); with its top bit set,
// the input is instead the file after the header, as is (chunk headers and all).
// Symbolization is off: module paths in the input would open files on this machine.
#include <unistd.h>
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "profiler/trace/trace_format.h"
#include "profiler/trace/trace_reader.h"
#include "reports/analysis/analyzer.h"

namespace {

void append(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }

void append_chunk(std::string& file, const uint8_t* raw, size_t n) {
  std::vector<uint8_t> compressed(ZSTD_compressBound(n));
  const size_t size = ZSTD_compress(compressed.data(), compressed.size(), raw, n, 1);
  if (ZSTD_isError(size)) return;
  const memstage::trace::ChunkHeader header{memstage::trace::kChunkMagic, static_cast<uint32_t>(size),
                                            static_cast<uint32_t>(n)};
  append(file, &header, sizeof(header));
  append(file, compressed.data(), size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  namespace trace = memstage::trace;
  std::string file;
  trace::FileHeader header{};
  memcpy(header.magic, trace::kFileMagic, sizeof(header.magic));
  const uint8_t mode = data[0];
  ++data, --size;
  // Bit 6: the newest version, whose chunks open with a kChunkStart (and a damaged chunk is
  // skipped); clear, version 3, whose chunks are records alone (the seeds' records).
  header.version = mode & 0x40 ? trace::kFormatVersion : trace::kFirstVersionWithChunkStarts - 1;
  append(file, &header, sizeof(header));
  if (mode & 0x80) {
    append(file, data, size);
  } else {
    const size_t chunks = (mode & 7) + 1;
    const size_t per_chunk = size / chunks + 1;
    for (size_t at = 0; at < size; at += per_chunk) append_chunk(file, data + at, std::min(per_chunk, size - at));
  }
  // One file per fuzzing process, removed when it exits.
  static const std::string path = "/tmp/memstage_fuzz_trace." + std::to_string(getpid()) + ".mst";
  static struct Remover {
    ~Remover() { unlink(path.c_str()); }
  } remover;
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return 0;
  fwrite(file.data(), 1, file.size(), f);
  fclose(f);
  memstage::reports::AnalysisOptions options;
  options.symbolize = false;
  try {
    memstage::reports::analyze({path}, std::nullopt, options);
  } catch (const trace::NotATraceError&) {
    // A trace without its process record: refused by name, as `memstage report` does.
  }
  return 0;
}
