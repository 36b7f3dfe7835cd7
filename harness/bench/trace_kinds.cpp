// What a trace is made of: per record kind, how many records, their bytes before
// compression and their share of the compressed file (each chunk's records of one kind
// compressed on their own at the tracer's level, so the shares add up to about the file's).
// A debugging aid for the capture's size (docs/performance.md), not a reader: it stops at
// the first bad chunk.
//   memstage_trace_kinds TRACE.mst
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/trace_format.h"
#include "profiler/trace/trace_records.h"

namespace {

namespace trace = memstage::trace;
namespace records = memstage::trace::records;

struct KindBytes {
  std::string name;
  uint64_t records = 0, raw_bytes = 0, compressed_bytes = 0;
};

template <class R>
std::string kind_name() {
  // "... [with R = memstage::trace::records::Time]": the record's type name.
  const std::string_view f = __PRETTY_FUNCTION__;
  const size_t with = f.find("R = ");
  const size_t end = f.find_first_of("];", with);
  const size_t from = f.rfind("::", end) + 2;
  return std::string(f.substr(from, end - from));
}

// Decodes one record of `tag`, appending its bytes (tag included) to `out[tag]`.
template <size_t... I>
bool split_one(uint8_t tag, const uint8_t* start, records::FieldSource& source,
               std::map<uint8_t, std::string>& out, std::map<uint8_t, KindBytes>& kinds,
               std::index_sequence<I...>) {
  const auto one = [&]<class R>(R* r) {
    if (tag != static_cast<uint8_t>(R::kTag)) return false;
    if (!records::decode(source, *r)) return false;
    KindBytes& k = kinds[tag];
    if (k.name.empty()) k.name = kind_name<R>();
    ++k.records;
    const auto bytes = static_cast<size_t>(source.position() - start);
    k.raw_bytes += bytes;
    out[tag].append(reinterpret_cast<const char*>(start), bytes);
    return true;
  };
  records::AllRecords scratch;
  return (one(&std::get<I>(scratch)) || ...);
}

bool split_chunk(const std::vector<uint8_t>& raw, std::map<uint8_t, KindBytes>& kinds) {
  std::map<uint8_t, std::string> by_kind;
  records::FieldSource source(raw.data(), raw.data() + raw.size());
  while (!source.done()) {
    const uint8_t* start = source.position();
    uint8_t tag;
    if (!source.get_tag(tag) ||
        !split_one(tag, start, source, by_kind, kinds, std::make_index_sequence<records::kRecordKinds>{})) {
      return false;
    }
  }
  for (auto& [tag, bytes] : by_kind) {
    std::vector<char> out(ZSTD_compressBound(bytes.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), 1);
    if (!ZSTD_isError(n)) kinds[tag].compressed_bytes += n;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s TRACE.mst\n", argv[0]);
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  trace::FileHeader header{};
  if (!f || fread(&header, sizeof(header), 1, f) != 1 || memcmp(header.magic, trace::kFileMagic, 8) != 0) {
    fprintf(stderr, "%s: not a trace\n", argv[1]);
    return 1;
  }
  std::map<uint8_t, KindBytes> kinds;
  uint64_t file_bytes = sizeof(header), chunks = 0;
  trace::ChunkHeader chunk{};
  std::vector<uint8_t> compressed, raw;
  while (fread(&chunk, sizeof(chunk), 1, f) == 1 && chunk.magic == trace::kChunkMagic) {
    compressed.resize(chunk.compressed_bytes);
    raw.resize(chunk.raw_bytes);
    if (fread(compressed.data(), 1, compressed.size(), f) != compressed.size()) break;
    const size_t n = ZSTD_decompress(raw.data(), raw.size(), compressed.data(), compressed.size());
    if (ZSTD_isError(n) || n != raw.size() || !split_chunk(raw, kinds)) break;
    file_bytes += sizeof(chunk) + compressed.size();
    ++chunks;
  }
  printf("%s: %llu chunks, %llu bytes read\n", argv[1], static_cast<unsigned long long>(chunks),
         static_cast<unsigned long long>(file_bytes));
  printf("%-18s %10s %12s %12s\n", "kind", "records", "raw_bytes", "zstd_bytes");
  for (const auto& [tag, k] : kinds) {
    printf("%-18s %10llu %12llu %12llu\n", k.name.c_str(), static_cast<unsigned long long>(k.records),
           static_cast<unsigned long long>(k.raw_bytes), static_cast<unsigned long long>(k.compressed_bytes));
  }
  return 0;
}
