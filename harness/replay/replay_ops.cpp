#include "harness/replay/replay_ops.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "profiler/trace/trace_reader.h"

namespace memstage::replay {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { fclose(f); }
};

// The trace's events as ops, each block given the lowest free slot: the replayer's table is
// as long as the most blocks live at once, not as the allocations.
class OpsWriter : public trace::TraceVisitor {
 public:
  OpsWriter(FILE* out, const std::string& trace_path) : out_(out), trace_path_(trace_path) {}

  void on_process_info(const trace::ProcessInfo& info) override {
    if (info.mode == trace::Mode::kFull) return;
    throw std::runtime_error(fmt::format(
        "{} is a {}-mode trace: only full mode records every allocation and free in order, which a replay "
        "needs (memstage run --mode full)",
        trace_path_, trace::mode_name(info.mode)));
  }
  void on_alloc_info(uint32_t id, uint64_t size, uint32_t, int32_t) override {
    if (id >= sizes_.size()) {
      sizes_.resize(id + 1);
      live_.resize(id + 1);
    }
    sizes_[id] = size;
  }
  void on_alloc(uint32_t info, bool realloc) override {
    if (info >= sizes_.size()) return;  // an info a damaged chunk lost
    if (realloc && pending_free_) {
      const uint32_t slot = *std::exchange(pending_free_, std::nullopt);
      write(OpKind::kRealloc, slot, sizes_[info]);
      live_[info].push_back(slot);
      ++summary_.reallocs;
      return;
    }
    flush_free();
    const uint32_t slot = take_slot();
    write(OpKind::kMalloc, slot, sizes_[info]);
    live_[info].push_back(slot);
    ++summary_.allocations;
  }
  void on_free(uint32_t info, bool) override {
    flush_free();
    if (info >= live_.size() || live_[info].empty()) {
      ++summary_.unmatched_frees;
      return;
    }
    pending_free_ = live_[info].back();  // a realloc's free half, if a kRealloc follows
    live_[info].pop_back();
  }
  void on_stage_name(uint32_t, const std::string& name) override { names_.push_back(name); }
  void on_stage_begin(uint32_t name_id, uint64_t) override {
    flush_free();
    write(OpKind::kStageBegin, 0, name_id);
  }
  void on_stage_end(uint64_t) override {
    flush_free();
    write(OpKind::kStageEnd, 0, 0);
  }

  // The header and the names, once the trace is read.
  ConversionSummary finish() {
    flush_free();
    for (const std::string& name : names_) {
      const auto length = static_cast<uint32_t>(name.size());
      put(&length, sizeof(length));
      put(name.data(), name.size());
    }
    OpsHeader header{};
    memcpy(header.magic, kOpsMagic, sizeof(header.magic));
    header.version = kOpsVersion;
    header.slots = summary_.slots;
    header.ops = ops_;
    if (fseek(out_, 0, SEEK_SET) != 0) throw std::runtime_error("cannot write the replay's ops");
    put(&header, sizeof(header));
    return summary_;
  }

 private:
  uint32_t take_slot() {
    if (!free_slots_.empty()) {
      const uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      return slot;
    }
    return summary_.slots++;
  }
  void flush_free() {
    if (!pending_free_) return;
    const uint32_t slot = *std::exchange(pending_free_, std::nullopt);
    write(OpKind::kFree, slot, 0);
    free_slots_.push_back(slot);
    ++summary_.frees;
  }
  void write(OpKind kind, uint32_t slot, uint64_t value) {
    const Op op{kind, slot, value};
    put(&op, sizeof(op));
    ++ops_;
  }
  void put(const void* data, size_t bytes) {
    if (fwrite(data, 1, bytes, out_) != bytes) throw std::runtime_error("cannot write the replay's ops (disk full?)");
  }

  FILE* out_;
  const std::string& trace_path_;
  std::vector<uint64_t> sizes_;                // by info
  std::vector<std::vector<uint32_t>> live_;    // by info: the slots of its live blocks, latest last
  std::vector<uint32_t> free_slots_;
  std::optional<uint32_t> pending_free_;
  std::vector<std::string> names_;
  uint64_t ops_ = 0;
  ConversionSummary summary_;
};

}  // namespace

ConversionSummary write_replay_ops(const std::string& trace_path, const std::string& ops_path) {
  std::unique_ptr<FILE, FileCloser> out(fopen(ops_path.c_str(), "wb"));
  if (!out) throw std::runtime_error("cannot write " + ops_path + ": " + strerror(errno));
  const OpsHeader placeholder{};
  if (fwrite(&placeholder, sizeof(placeholder), 1, out.get()) != 1) throw std::runtime_error("cannot write " + ops_path);
  OpsWriter writer(out.get(), trace_path);
  const trace::ReadSummary read = trace::read_trace(trace_path, writer);
  ConversionSummary summary = writer.finish();
  if (read.truncated) summary.warnings.push_back(trace_path + " is truncated (" + read.truncation + "); replayed up to there");
  if (!read.damage.spans.empty()) {
    const trace::DamagedSpan& first = read.damage.spans.front();
    throw std::runtime_error(fmt::format(
        "{} is damaged ({} bytes at offset {}: {}): the allocations and frees in them are lost, and a replay needs "
        "every one in order (a truncated trace, whose end alone is missing, is replayed up to there)",
        trace_path, read.damage.skipped_bytes(), first.offset, first.why));
  }
  if (summary.unmatched_frees) {
    summary.warnings.push_back(fmt::format("{} frees of blocks the trace never saw allocated were left out",
                                           summary.unmatched_frees));
  }
  if (fflush(out.get()) != 0) throw std::runtime_error("cannot write " + ops_path + " (disk full?)");
  return summary;
}

}  // namespace memstage::replay
