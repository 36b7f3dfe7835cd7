#include "profiler/trace/trace_reader.h"

#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "profiler/trace/varint.h"

namespace memstage::trace {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

class CorruptRecord : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Decodes the records of one chunk.
class RecordParser {
 public:
  RecordParser(const uint8_t* begin, const uint8_t* end) : pos_(begin), end_(end) {}
  bool done() const { return pos_ == end_; }
  uint8_t tag() {
    if (pos_ == end_) throw CorruptRecord("record cut short");
    return *pos_++;
  }
  uint64_t u() {
    uint64_t v;
    if (!get_varint(pos_, end_, v)) throw CorruptRecord("bad varint");
    return v;
  }
  int64_t s() {
    int64_t v;
    if (!get_svarint(pos_, end_, v)) throw CorruptRecord("bad varint");
    return v;
  }
  std::string str() {
    const uint64_t n = u();
    if (n > static_cast<uint64_t>(end_ - pos_)) throw CorruptRecord("string past the chunk");
    std::string out(reinterpret_cast<const char*>(pos_), n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* pos_;
  const uint8_t* end_;
};

class ChunkDecoder {
 public:
  explicit ChunkDecoder(TraceVisitor& v) : v_(v) {}

  uint64_t decode(const uint8_t* begin, const uint8_t* end, bool& ended) {
    RecordParser p(begin, end);
    uint64_t records = 0;
    while (!p.done()) {
      const auto tag = static_cast<Tag>(p.tag());
      ++records;
      switch (tag) {
        case Tag::kProcessInfo: {
          ProcessInfo info;
          info.pid = p.u();
          info.parent_pid = p.u();
          info.mode = static_cast<Mode>(p.u());
          info.start_realtime_ns = p.u();
          info.start_monotonic_ns = p.u();
          info.page_bytes = p.u();
          info.max_depth = static_cast<uint32_t>(p.u());
          info.sample_interval_ns = p.u();
          info.exe = p.str();
          const uint64_t argc = p.u();
          if (argc > 1'000'000) throw CorruptRecord("implausible argc");
          for (uint64_t i = 0; i < argc; ++i) info.argv.push_back(p.str());
          info.allocator = p.str();
          v_.on_process_info(info);
          break;
        }
        case Tag::kTime: v_.on_time(p.u()); break;
        case Tag::kModules: {
          const uint64_t n = p.u();
          if (n > 1'000'000) throw CorruptRecord("implausible module count");
          std::vector<Module> modules(n);
          for (auto& m : modules) {
            m.path = p.str();
            m.load_bias = p.u();
            const uint64_t segments = p.u();
            if (segments > 1024) throw CorruptRecord("implausible segment count");
            for (uint64_t i = 0; i < segments; ++i) {
              Segment seg;
              seg.start = p.u();
              seg.end = p.u();
              m.segments.push_back(seg);
            }
          }
          v_.on_modules(modules);
          break;
        }
        case Tag::kStack: {
          const uint64_t depth = p.u();
          if (depth > 4096) throw CorruptRecord("implausible stack depth");
          ips_.resize(depth);
          for (uint64_t i = 0; i < depth; ++i) {
            ips_[i] = i == 0 ? p.u() : ips_[i - 1] + static_cast<uint64_t>(p.s());
          }
          v_.on_stack(next_stack_id_++, ips_);
          break;
        }
        case Tag::kAllocInfo: {
          const uint64_t size = p.u();
          const uint64_t stack = p.u();
          const uint64_t stage_plus_one = p.u();
          check_stack(stack);
          if (stage_plus_one > stage_instances_) throw CorruptRecord("allocation info of a stage not begun");
          v_.on_alloc_info(next_info_id_++, size, static_cast<uint32_t>(stack),
                           static_cast<int32_t>(stage_plus_one) - 1);
          break;
        }
        case Tag::kAlloc:
        case Tag::kRealloc: {
          const uint64_t info = p.u();
          check_info(info);
          v_.on_alloc(static_cast<uint32_t>(info), tag == Tag::kRealloc);
          last_alloc_info_ = static_cast<int64_t>(info);
          break;
        }
        case Tag::kFree: {
          const uint64_t info = p.u();
          check_info(info);
          v_.on_free(static_cast<uint32_t>(info), false);
          last_alloc_info_ = -1;
          break;
        }
        case Tag::kFreeLast:
          if (last_alloc_info_ < 0) throw CorruptRecord("free of the latest allocation with none before it");
          v_.on_free(static_cast<uint32_t>(last_alloc_info_), true);
          last_alloc_info_ = -1;
          break;
        case Tag::kMmap: {
          const uint64_t address = p.u();
          const uint64_t length = p.u();
          const uint64_t stack = p.u();
          check_stack(stack);
          v_.on_mmap(address, length, static_cast<uint32_t>(stack));
          break;
        }
        case Tag::kMunmap: {
          const uint64_t address = p.u();
          v_.on_munmap(address, p.u());
          break;
        }
        case Tag::kMremap: {
          const uint64_t old_address = p.u();
          const uint64_t old_length = p.u();
          const uint64_t new_address = p.u();
          const uint64_t new_length = p.u();
          const uint64_t stack = p.u();
          check_stack(stack);
          v_.on_mremap(old_address, old_length, new_address, new_length, static_cast<uint32_t>(stack));
          break;
        }
        case Tag::kStageName: v_.on_stage_name(next_stage_name_id_++, p.str()); break;
        case Tag::kStageBegin: {
          const uint64_t id = p.u();
          if (id >= next_stage_name_id_) throw CorruptRecord("stage begins before its name");
          ++stage_instances_;
          v_.on_stage_begin(static_cast<uint32_t>(id), p.u());
          break;
        }
        case Tag::kStageEnd: v_.on_stage_end(p.u()); break;
        case Tag::kRss: {
          const uint64_t t = p.u();
          const uint64_t rss = p.u();
          v_.on_rss(t, rss, p.u());
          break;
        }
        case Tag::kAllocatorStats: {
          AllocatorStatsRecord r;
          r.t_ns = p.u();
          r.in_use_bytes = p.u();
          r.resident_bytes = p.u();
          r.mapped_bytes = p.u();
          v_.on_allocator_stats(r);
          break;
        }
        case Tag::kCounters: {
          CountersRecord r;
          r.t_ns = p.u();
          r.allocations = p.u();
          r.frees = p.u();
          r.bytes_allocated = p.u();
          v_.on_counters(r);
          break;
        }
        case Tag::kEnd:
          v_.on_end(p.u());
          ended = true;
          break;
        case Tag::kSignal: {
          const uint64_t t = p.u();
          v_.on_signal(t, static_cast<int>(p.u()));
          break;
        }
        case Tag::kLost: v_.on_lost(p.u()); break;
        case Tag::kRamLimit: {
          const uint64_t t = p.u();
          const uint64_t rss = p.u();
          v_.on_ram_limit(t, rss, p.u());
          break;
        }
        case Tag::kPythonCode: {
          PythonCode code;
          code.id = p.u();
          code.first_line = p.u();
          code.file = p.str();
          code.function = p.str();
          v_.on_python_code(code);
          break;
        }
        case Tag::kPythonInfo: {
          PythonInfo info;
          info.version = p.str();
          info.allocator = p.str();
          v_.on_python_info(info);
          break;
        }
        default: throw CorruptRecord("unknown record tag " + std::to_string(static_cast<int>(tag)));
      }
    }
    return records;
  }

 private:
  void check_stack(uint64_t id) const {
    if (id >= next_stack_id_) throw CorruptRecord("event refers to an undefined stack");
  }
  void check_info(uint64_t id) const {
    if (id >= next_info_id_) throw CorruptRecord("event refers to an undefined allocation info");
  }

  TraceVisitor& v_;
  uint32_t next_info_id_ = 0;
  int64_t last_alloc_info_ = -1;
  uint64_t stage_instances_ = 0;
  uint32_t next_stack_id_ = 0;
  uint32_t next_stage_name_id_ = 0;
  std::vector<uint64_t> ips_;
};

}  // namespace

bool looks_like_trace(const std::string& path) {
  File f(fopen(path.c_str(), "rb"));
  if (!f) return false;
  FileHeader header{};
  return fread(&header, sizeof(header), 1, f.get()) == 1 &&
         memcmp(header.magic, kFileMagic, sizeof(header.magic)) == 0;
}

ReadSummary read_trace(const std::string& path, TraceVisitor& visitor,
                       const std::function<void(uint64_t, uint64_t)>& progress) {
  File f(fopen(path.c_str(), "rb"));
  if (!f) throw std::runtime_error("cannot open " + path + ": " + strerror(errno));
  ReadSummary summary;
  fseeko(f.get(), 0, SEEK_END);
  summary.file_bytes = static_cast<uint64_t>(ftello(f.get()));
  fseeko(f.get(), 0, SEEK_SET);

  FileHeader header{};
  if (fread(&header, sizeof(header), 1, f.get()) != 1 ||
      memcmp(header.magic, kFileMagic, sizeof(header.magic)) != 0) {
    throw NotATraceError(path + " is not a memstage trace");
  }
  if (header.version != kFormatVersion) {
    throw NotATraceError(path + " is a memstage trace of version " + std::to_string(header.version) +
                         ", this build reads version " + std::to_string(kFormatVersion));
  }

  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> zstd(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<uint8_t> compressed;
  std::vector<uint8_t> raw;
  ChunkDecoder decoder(visitor);
  uint64_t offset = sizeof(header);
  for (;;) {
    ChunkHeader chunk{};
    const size_t got = fread(&chunk, 1, sizeof(chunk), f.get());
    if (got == 0) break;
    auto stop = [&](const std::string& why) {
      summary.truncated = true;
      summary.truncation = why + " at byte " + std::to_string(offset);
    };
    if (got < sizeof(chunk)) {
      stop("the file ends inside a chunk header");
      break;
    }
    if (chunk.magic != kChunkMagic || chunk.raw_bytes > kMaxChunkRawBytes ||
        chunk.compressed_bytes > ZSTD_compressBound(kMaxChunkRawBytes)) {
      stop("corrupt chunk header");
      break;
    }
    compressed.resize(chunk.compressed_bytes);
    if (fread(compressed.data(), 1, compressed.size(), f.get()) != compressed.size()) {
      stop("the file ends inside a chunk");
      break;
    }
    raw.resize(chunk.raw_bytes);
    const size_t n = ZSTD_decompressDCtx(zstd.get(), raw.data(), raw.size(), compressed.data(),
                                         compressed.size());
    if (ZSTD_isError(n) || n != chunk.raw_bytes) {
      stop("corrupt chunk (" + std::string(ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size") + ")");
      break;
    }
    try {
      summary.records += decoder.decode(raw.data(), raw.data() + n, summary.ended_cleanly);
    } catch (const CorruptRecord& e) {
      stop(std::string("corrupt record (") + e.what() + ")");
      break;
    }
    ++summary.chunks;
    offset += sizeof(chunk) + chunk.compressed_bytes;
    if (progress) progress(offset, summary.file_bytes);
  }
  return summary;
}

}  // namespace memstage::trace
