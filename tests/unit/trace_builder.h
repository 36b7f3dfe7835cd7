// Writes hand-made traces for tests: records as trace_format.h defines them, in chunks.
#pragma once

#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>
#include <span>
#include <string>
#include <vector>

#include "profiler/trace/trace_format.h"
#include "profiler/trace/trace_records.h"

namespace memstage::testing {

// A file in the temporary folder named for this test process: runs of the suite at the
// same time on one machine do not write each other's files.
inline std::string temp_trace_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("memstage_unit_" + std::to_string(getpid()) + "_" + name)).string();
}

// `bytes` as the whole of the file at `path` (a trace cut or damaged by a test).
inline void write_bytes(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
}

// A Modules record listing one module, `path`, with one executable segment [start, end).
// The record views this object's own path and segment: keep it while the record is used.
class OneModuleList {
 public:
  OneModuleList(std::string path, uint64_t start, uint64_t end) : path_(std::move(path)), segment_{start, end} {
    entry_.path = path_;
    entry_.segments.items = std::span(&segment_, 1);
    record_.modules.items = std::span(&entry_, 1);
  }
  OneModuleList(const OneModuleList&) = delete;
  OneModuleList& operator=(const OneModuleList&) = delete;
  const trace::records::Modules& record() const { return record_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  trace::records::Segment segment_;
  trace::records::ModuleEntry entry_;
  trace::records::Modules record_;
};

class TraceBuilder {
 public:
  TraceBuilder& process(uint64_t pid = 100, trace::Mode mode = trace::Mode::kFull) {
    const std::string_view argv[] = {"test"};
    trace::records::ProcessInfo r;
    r.pid = pid;
    r.parent_pid = 1;
    r.mode = static_cast<uint64_t>(mode);
    r.start_realtime_ns = 1'700'000'000'000'000'000;
    r.page_bytes = 4096;
    r.max_depth = 64;
    r.sample_interval_ns = 10'000'000;
    r.exe = "/bin/test";
    r.argv.items = argv;
    r.allocator = "glibc";
    return record(r);
  }
  TraceBuilder& time(uint64_t t_ns) { return record(trace::records::Time{t_ns}); }
  // Stacks are numbered in definition order from 0 here; the trace stores them as the
  // tracer does, as nodes of a tree (kStackNode), and names each by its innermost node.
  TraceBuilder& stack(std::vector<uint64_t> ips) {
    uint64_t node = 0;  // the root: the empty stack
    for (size_t i = ips.size(); i > 0; --i) {
      const auto key = std::make_pair(node, ips[i - 1]);
      auto it = nodes_.find(key);
      if (it == nodes_.end()) {
        const uint64_t id = nodes_.size() + 1;
        record(trace::records::StackNode{id - node, static_cast<int64_t>(ips[i - 1] - node_address_[node])});
        node_address_[id] = ips[i - 1];
        it = nodes_.emplace(key, id).first;
      }
      node = it->second;
    }
    stack_nodes_.push_back(node);
    return *this;
  }
  // The trace's id of the builder's stack `id` (as numbered by stack()); ids never defined
  // pass through, for tests of bad traces.
  uint64_t stack_node(uint32_t id) const { return id < stack_nodes_.size() ? stack_nodes_[id] : id; }
  // Blocks are named by address here, as the tracer sees them; the trace names them by
  // allocation info, as the tracer's writer does.
  TraceBuilder& alloc(uint64_t address, uint64_t size, uint32_t stack_id = 0, bool realloc = false) {
    const auto it = info_of(size, stack_id);
    live_[address] = it->second;
    last_alloc_ = address;
    last_was_alloc_ = true;
    return realloc ? record(trace::records::Realloc{it->second}) : record(trace::records::Alloc{it->second});
  }
  // An allocation freed at once, as the writer writes it since version 3 (kTemporary).
  TraceBuilder& temporary(uint64_t size, uint32_t stack_id = 0) {
    const auto it = info_of(size, stack_id);
    last_was_alloc_ = false;
    return record(trace::records::Temporary{it->second});
  }
  TraceBuilder& free(uint64_t address) {
    auto it = live_.find(address);
    if (it == live_.end()) return *this;  // the writer leaves unknown frees out
    const uint64_t info = it->second;
    live_.erase(it);
    const bool temporary = last_was_alloc_ && address == last_alloc_;
    last_was_alloc_ = false;
    return temporary ? record(trace::records::FreeLast{}) : record(trace::records::Free{info});
  }
  // The allocations after it are made by this call, asking this alignment (kCallAllocInfo);
  // before any, by an unknown one (kAllocInfo, as before version 6).
  TraceBuilder& call(trace::AllocCall call, uint8_t align_log2 = 0) {
    call_ = trace::encode_alloc_call(call, align_log2);
    return *this;
  }
  // The allocation events after it are this thread's (kThread), as the tracer's numbering.
  TraceBuilder& thread(uint64_t number) { return record(trace::records::Thread{number}); }
  TraceBuilder& stage_name(const std::string& name) { return record(trace::records::StageName{name}); }
  TraceBuilder& stage_begin(uint32_t id, uint64_t t_ns) { return record(trace::records::StageBegin{id, t_ns}); }
  TraceBuilder& stage_end(uint64_t t_ns) { return record(trace::records::StageEnd{t_ns}); }
  TraceBuilder& rss(uint64_t t_ns, uint64_t bytes, uint64_t tracer_bytes = 0) {
    return record(trace::records::Rss{t_ns, bytes, tracer_bytes});
  }
  TraceBuilder& end(uint64_t t_ns) { return record(trace::records::End{t_ns}); }
  // Any record of trace_records.h, encoded as the tracer does.
  // A chunk's records open with its kChunkStart (version 4 on), counted as the writer does.
  template <class R>
  TraceBuilder& record(const R& r) {
    if (raw_.empty()) chunk_start();
    count_definitions(r);
    const size_t at = raw_.size();
    raw_.resize(at + trace::records::max_encoded_bytes(r));
    raw_.resize(static_cast<size_t>(trace::records::encode(raw_.data() + at, r) - raw_.data()));
    return *this;
  }

  // Records already encoded (the tracer's own encoders, as aggregate mode's).
  TraceBuilder& raw(const uint8_t* bytes, size_t n) {
    if (raw_.empty()) chunk_start();
    raw_.insert(raw_.end(), bytes, bytes + n);
    return *this;
  }

  // Closes the current chunk: records after this go into the next one.
  TraceBuilder& chunk() {
    if (raw_.empty()) return *this;
    // As the tracer compresses: level 1, with the content checksum.
    std::vector<uint8_t> out(ZSTD_compressBound(raw_.size()));
    ZSTD_CCtx* zstd = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(zstd, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(zstd, ZSTD_c_checksumFlag, 1);
    const size_t n = ZSTD_compress2(zstd, out.data(), out.size(), raw_.data(), raw_.size());
    ZSTD_freeCCtx(zstd);
    trace::ChunkHeader h{trace::kChunkMagic, static_cast<uint32_t>(n), static_cast<uint32_t>(raw_.size())};
    append(&h, sizeof(h));
    append(out.data(), n);
    raw_.clear();
    return *this;
  }

  std::string bytes() {
    chunk();
    return file_;
  }
  void write(const std::string& path) { write_bytes(path, bytes()); }

  // `version`: an older format's, for tests that read one (before 4: no chunk starts).
  explicit TraceBuilder(uint32_t version = trace::kFormatVersion) : version_(version) {
    trace::FileHeader h{};
    memcpy(h.magic, trace::kFileMagic, sizeof(h.magic));
    h.version = version;
    append(&h, sizeof(h));
  }

 private:
  // The info of (size, stack, the stage open, the call), defined where new.
  std::map<std::tuple<uint64_t, uint32_t, uint64_t, uint64_t>, uint64_t>::iterator info_of(uint64_t size,
                                                                                         uint32_t stack_id) {
    const uint64_t stage_plus_one = open_stages_.empty() ? 0 : open_stages_.back().instance + 1;
    auto [it, added] = infos_.try_emplace(std::make_tuple(size, stack_id, stage_plus_one, call_), infos_.size());
    if (added && call_ == 0) record(trace::records::AllocInfo{size, stack_node(stack_id), stage_plus_one});
    if (added && call_ != 0) record(trace::records::CallAllocInfo{size, stack_node(stack_id), stage_plus_one, call_});
    return it;
  }
  template <class R>
  void count_definitions(const R& r) {
    if constexpr (std::is_same_v<R, trace::records::StackNode>) ++next_stack_node_;
    if constexpr (std::is_same_v<R, trace::records::AllocInfo>) ++next_alloc_info_;
    if constexpr (std::is_same_v<R, trace::records::CallAllocInfo>) ++next_alloc_info_;
    if constexpr (std::is_same_v<R, trace::records::StageName>) ++next_stage_name_;
    if constexpr (std::is_same_v<R, trace::records::StageBegin>) {
      open_stages_.push_back(trace::records::OpenStage{stage_instances_++, r.name_id});
    }
    if constexpr (std::is_same_v<R, trace::records::StageEnd>) {
      if (!open_stages_.empty()) open_stages_.pop_back();
    }
  }
  void chunk_start() {
    if (version_ < trace::kFirstVersionWithChunkStarts) return;
    trace::records::ChunkStart start;
    start.next_stack_node = next_stack_node_;
    start.next_alloc_info = next_alloc_info_;
    start.next_stage_name = next_stage_name_;
    start.next_stage_instance = stage_instances_;
    start.open_stages.items = open_stages_;
    raw_.resize(trace::records::max_encoded_bytes(start));
    raw_.resize(static_cast<size_t>(trace::records::encode(raw_.data(), start) - raw_.data()));
  }

  void append(const void* p, size_t n) { file_.append(static_cast<const char*>(p), n); }

  std::vector<uint8_t> raw_;
  std::string file_;
  std::map<std::tuple<uint64_t, uint32_t, uint64_t, uint64_t>, uint64_t> infos_;  // (size, stack, stage+1, call) -> id
  uint64_t call_ = 0;  // kCallAllocInfo's call field; 0: unknown
  std::map<uint64_t, uint64_t> live_;  // address -> info id
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> nodes_;  // (parent, address) -> node id
  std::map<uint64_t, uint64_t> node_address_{{0, 0}};
  std::vector<uint64_t> stack_nodes_;  // the builder's stack id -> its innermost node
  uint64_t last_alloc_ = 0;
  bool last_was_alloc_ = false;
  uint32_t version_;
  // What the records so far defined, as a chunk start counts it.
  std::vector<trace::records::OpenStage> open_stages_;
  uint64_t stage_instances_ = 0;
  uint64_t next_stack_node_ = 1, next_alloc_info_ = 0, next_stage_name_ = 0;
};

}  // namespace memstage::testing
