// Writes hand-made traces for tests: records as trace_format.h defines them, in chunks.
#pragma once

#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "profiler/trace/trace_format.h"
#include "profiler/trace/varint.h"

namespace memstage::testing {

class TraceBuilder {
 public:
  TraceBuilder& process(uint64_t pid = 100, trace::Mode mode = trace::Mode::kFull) {
    tag(trace::Tag::kProcessInfo);
    for (uint64_t v : {pid, uint64_t{1}, static_cast<uint64_t>(mode), uint64_t{1'700'000'000'000'000'000},
                       uint64_t{0}, uint64_t{4096}, uint64_t{64}, uint64_t{10'000'000}}) {
      u(v);
    }
    str("/bin/test");
    u(1);
    str("test");
    str("glibc");
    return *this;
  }
  TraceBuilder& time(uint64_t t_ns) { return tag(trace::Tag::kTime).u(t_ns); }
  // Stacks are numbered in definition order from 0.
  TraceBuilder& stack(std::vector<uint64_t> ips) {
    tag(trace::Tag::kStack).u(ips.size());
    for (size_t i = 0; i < ips.size(); ++i) {
      if (i == 0) {
        u(ips[0]);
      } else {
        s(static_cast<int64_t>(ips[i] - ips[i - 1]));
      }
    }
    return *this;
  }
  // Blocks are named by address here, as the tracer sees them; the trace names them by
  // allocation info, as the tracer's writer does.
  TraceBuilder& alloc(uint64_t address, uint64_t size, uint32_t stack_id = 0, bool realloc = false) {
    const uint64_t stage_plus_one = open_stages_.empty() ? 0 : open_stages_.back() + 1;
    const auto key = std::make_tuple(size, stack_id, stage_plus_one);
    auto [it, added] = infos_.try_emplace(key, infos_.size());
    if (added) tag(trace::Tag::kAllocInfo).u(size).u(stack_id).u(stage_plus_one);
    live_[address] = it->second;
    last_alloc_ = address;
    last_was_alloc_ = true;
    return tag(realloc ? trace::Tag::kRealloc : trace::Tag::kAlloc).u(it->second);
  }
  TraceBuilder& free(uint64_t address) {
    auto it = live_.find(address);
    if (it == live_.end()) return *this;  // the writer leaves unknown frees out
    const uint64_t info = it->second;
    live_.erase(it);
    const bool temporary = last_was_alloc_ && address == last_alloc_;
    last_was_alloc_ = false;
    return temporary ? tag(trace::Tag::kFreeLast) : tag(trace::Tag::kFree).u(info);
  }
  TraceBuilder& stage_name(const std::string& name) { return tag(trace::Tag::kStageName).str(name); }
  TraceBuilder& stage_begin(uint32_t id, uint64_t t_ns) {
    open_stages_.push_back(stage_instances_++);
    return tag(trace::Tag::kStageBegin).u(id).u(t_ns);
  }
  TraceBuilder& stage_end(uint64_t t_ns) {
    if (!open_stages_.empty()) open_stages_.pop_back();
    return tag(trace::Tag::kStageEnd).u(t_ns);
  }
  TraceBuilder& rss(uint64_t t_ns, uint64_t bytes) { return tag(trace::Tag::kRss).u(t_ns).u(bytes).u(0); }
  TraceBuilder& end(uint64_t t_ns) { return tag(trace::Tag::kEnd).u(t_ns); }

  // Closes the current chunk: records after this go into the next one.
  TraceBuilder& chunk() {
    if (raw_.empty()) return *this;
    std::vector<uint8_t> out(ZSTD_compressBound(raw_.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), raw_.data(), raw_.size(), 1);
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
  void write(const std::string& path) {
    const std::string b = bytes();
    FILE* f = fopen(path.c_str(), "wb");
    fwrite(b.data(), 1, b.size(), f);
    fclose(f);
  }

  TraceBuilder() {
    trace::FileHeader h{};
    memcpy(h.magic, trace::kFileMagic, sizeof(h.magic));
    h.version = trace::kFormatVersion;
    append(&h, sizeof(h));
  }

 private:
  TraceBuilder& tag(trace::Tag t) {
    raw_.push_back(static_cast<uint8_t>(t));
    return *this;
  }
  TraceBuilder& u(uint64_t v) {
    uint8_t buf[trace::kMaxVarintBytes];
    raw_.insert(raw_.end(), buf, trace::put_varint(buf, v));
    return *this;
  }
  TraceBuilder& s(int64_t v) { return u(trace::zigzag_encode(v)); }
  TraceBuilder& str(const std::string& v) {
    u(v.size());
    raw_.insert(raw_.end(), v.begin(), v.end());
    return *this;
  }
  void append(const void* p, size_t n) { file_.append(static_cast<const char*>(p), n); }

  std::vector<uint8_t> raw_;
  std::string file_;
  std::map<std::tuple<uint64_t, uint32_t, uint64_t>, uint64_t> infos_;  // (size, stack, stage+1) -> id
  std::map<uint64_t, uint64_t> live_;  // address -> info id
  uint64_t last_alloc_ = 0;
  bool last_was_alloc_ = false;
  std::vector<uint64_t> open_stages_;
  uint64_t stage_instances_ = 0;
};

}  // namespace memstage::testing
