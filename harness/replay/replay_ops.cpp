#include "harness/replay/replay_ops.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "profiler/trace/trace_reader.h"

namespace memstage::replay {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

void put(FILE* out, const void* data, size_t bytes) {
  if (fwrite(data, 1, bytes, out) != bytes) throw std::runtime_error("cannot write the replay's ops (disk full?)");
}

// One replay thread's stream, written to a file of its own until the trace is read (the
// streams follow each other in the ops file).
struct Stream {
  File ops{tmpfile()};
  uint64_t count = 0;
  std::optional<uint32_t> pending_free;  // a realloc's free half, if a kRealloc follows
  std::vector<uint32_t> free_slots;      // freed by this thread: taken again by it alone
  std::vector<uint64_t> waited;          // by thread: the progress of it already waited for
  uint64_t epoch = 0;                    // the latest mark of the trace's order its ops wait for
};

// Where one thread's op must come after another's: that thread's progress past `mark` ops.
struct Mark {
  uint32_t thread = 0;
  uint64_t mark = 0;  // 0: none
};

// The trace's events as ops, each recorded thread's in a stream of its own, with the waits
// that keep the order across threads where it matters (replay_ops.h).
class OpsWriter : public trace::TraceVisitor {
 public:
  explicit OpsWriter(const std::string& trace_path) : trace_path_(trace_path) { stream_of(0); }

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
      calls_.resize(id + 1);
      live_.resize(id + 1);
    }
    sizes_[id] = size;
    calls_[id] = 0;  // before version 6: unknown, replayed as malloc
  }
  void on_alloc_call(uint32_t id, trace::AllocCall call, uint8_t align_log2) override {
    if (id < calls_.size()) calls_[id] = static_cast<uint16_t>(static_cast<uint8_t>(call) | align_log2 << 8);
  }
  void on_thread(uint32_t recorded) override {
    const auto [it, added] = threads_.try_emplace(recorded, static_cast<uint32_t>(threads_.size()));
    current_ = stream_of(it->second);
  }
  void on_alloc(uint32_t info, bool realloc) override {
    if (info >= sizes_.size()) return;  // an info a damaged chunk lost
    count_event();
    Stream& s = streams_[current_];
    if (realloc && s.pending_free) {
      const uint32_t slot = *std::exchange(s.pending_free, std::nullopt);
      write(current_, Op{OpKind::kRealloc, static_cast<uint8_t>(trace::AllocCall::kRealloc), 0, 0, slot, sizes_[info]});
      live_[info].push_back(slot);
      ++summary_.reallocs;
      return;
    }
    flush_free(current_);
    const uint32_t slot = take_slot(s);
    const uint16_t call = calls_[info];
    write(current_, Op{OpKind::kMalloc, static_cast<uint8_t>(call), static_cast<uint8_t>(call >> 8), 0, slot, sizes_[info]});
    live_[info].push_back(slot);
    ++summary_.allocations;
  }
  void on_free(uint32_t info, bool) override {
    count_event();
    flush_free(current_);
    if (info >= live_.size() || live_[info].empty()) {
      ++summary_.unmatched_frees;
      return;
    }
    streams_[current_].pending_free = live_[info].back();
    live_[info].pop_back();
  }
  void on_stage_name(uint32_t, const std::string& name) override { names_.push_back(name); }
  void on_stage_begin(uint32_t name_id, uint64_t) override { stage_edge(Op{OpKind::kStageBegin, 0, 0, 0, 0, name_id}); }
  void on_stage_end(uint64_t) override { stage_edge(Op{OpKind::kStageEnd, 0, 0, 0, 0, 0}); }

  // The header, the streams and the names into `out`, once the trace is read.
  ConversionSummary finish(FILE* out) {
    for (uint32_t t = 0; t < streams_.size(); ++t) flush_free(t);
    summary_.threads = static_cast<uint32_t>(streams_.size());
    OpsHeader header{};
    memcpy(header.magic, kOpsMagic, sizeof(header.magic));
    header.version = kOpsVersion;
    header.slots = summary_.slots;
    header.threads = summary_.threads;
    for (const Stream& s : streams_) header.ops += s.count;
    put(out, &header, sizeof(header));
    for (const Stream& s : streams_) put(out, &s.count, sizeof(s.count));
    for (Stream& s : streams_) copy_stream(s, out);
    for (const std::string& name : names_) {
      const auto length = static_cast<uint32_t>(name.size());
      put(out, &length, sizeof(length));
      put(out, name.data(), name.size());
    }
    return summary_;
  }

 private:
  uint32_t stream_of(uint32_t thread) {
    while (streams_.size() <= thread) {
      streams_.emplace_back();
      if (!streams_.back().ops) throw std::runtime_error("cannot make a temporary file for the replay's ops");
    }
    return thread;
  }
  uint32_t take_slot(Stream& s) {
    if (!s.free_slots.empty()) {
      const uint32_t slot = s.free_slots.back();
      s.free_slots.pop_back();
      return slot;
    }
    touched_.emplace_back();
    return summary_.slots++;
  }
  void flush_free(uint32_t thread) {
    Stream& s = streams_[thread];
    if (!s.pending_free) return;
    const uint32_t slot = *std::exchange(s.pending_free, std::nullopt);
    write(thread, Op{OpKind::kFree, slot_calls_[slot], slot_aligns_[slot], 0, slot, 0});
    s.free_slots.push_back(slot);
    ++summary_.frees;
  }
  // A stage edge: after every thread's ops before it, and before every thread's after it.
  void stage_edge(const Op& op) {
    for (uint32_t t = 0; t < streams_.size(); ++t) flush_free(t);
    for (uint32_t t = 0; t < streams_.size(); ++t) {
      if (t != current_) wait_for(current_, Mark{t, streams_[t].count});
    }
    write(current_, op);
    barrier_ = Mark{current_, streams_[current_].count};
  }
  // Every kEpochEvents events of the trace: the streams' lengths, which every thread's later
  // ops wait for (replay_ops.h).
  void count_event() {
    if (++events_ % kEpochEvents != 0 || streams_.size() < 2) return;
    epoch_marks_.resize(streams_.size());
    for (uint32_t t = 0; t < streams_.size(); ++t) epoch_marks_[t] = streams_[t].count;
    ++epoch_;
  }
  // Appends `op` to `thread`'s stream after the waits its order needs.
  void write(uint32_t thread, const Op& op) {
    if (barrier_.thread != thread) wait_for(thread, barrier_);
    if (streams_[thread].epoch != epoch_) {
      streams_[thread].epoch = epoch_;
      for (uint32_t t = 0; t < epoch_marks_.size(); ++t) {
        if (t != thread) wait_for(thread, Mark{t, epoch_marks_[t]});
      }
    }
    const bool on_slot = op.kind == OpKind::kMalloc || op.kind == OpKind::kFree || op.kind == OpKind::kRealloc;
    if (on_slot && touched_[op.slot].thread != thread) wait_for(thread, touched_[op.slot]);
    put_op(thread, op);
    if (!on_slot) return;
    touched_[op.slot] = Mark{thread, streams_[thread].count};
    if (op.kind != OpKind::kFree) {
      if (slot_calls_.size() <= op.slot) {
        slot_calls_.resize(op.slot + 1);
        slot_aligns_.resize(op.slot + 1);
      }
      slot_calls_[op.slot] = op.call;
      slot_aligns_[op.slot] = op.align_log2;
    }
  }
  // A kWait in `thread`'s stream for `on`, unless one as far or further is there.
  void wait_for(uint32_t thread, const Mark& on) {
    if (on.mark == 0) return;
    std::vector<uint64_t>& waited = streams_[thread].waited;
    if (waited.size() <= on.thread) waited.resize(on.thread + 1);
    if (waited[on.thread] >= on.mark) return;
    waited[on.thread] = on.mark;
    put_op(thread, Op{OpKind::kWait, 0, 0, 0, on.thread, on.mark});
    ++summary_.cross_thread_waits;
  }
  void put_op(uint32_t thread, const Op& op) {
    put(streams_[thread].ops.get(), &op, sizeof(op));
    ++streams_[thread].count;
  }
  static void copy_stream(Stream& s, FILE* out) {
    rewind(s.ops.get());
    char buffer[1 << 16];
    for (size_t n; (n = fread(buffer, 1, sizeof(buffer), s.ops.get())) > 0;) put(out, buffer, n);
    if (ferror(s.ops.get())) throw std::runtime_error("cannot read back the replay's ops");
  }

  const std::string& trace_path_;
  std::vector<uint64_t> sizes_;              // by info
  std::vector<uint16_t> calls_;              // by info: AllocCall | align_log2 << 8
  std::vector<std::vector<uint32_t>> live_;  // by info: the slots of its live blocks, latest last
  std::vector<Mark> touched_;                // by slot: the last op on it
  std::vector<uint8_t> slot_calls_, slot_aligns_;  // by slot: the call of its block
  std::unordered_map<uint32_t, uint32_t> threads_;  // the trace's thread number -> stream
  std::vector<Stream> streams_;
  uint32_t current_ = 0;
  Mark barrier_;  // the latest stage edge
  uint64_t events_ = 0, epoch_ = 0;
  std::vector<uint64_t> epoch_marks_;  // by thread: its stream's length at the latest mark
  std::vector<std::string> names_;
  ConversionSummary summary_;
};

}  // namespace

ConversionSummary write_replay_ops(const std::string& trace_path, const std::string& ops_path) {
  File out(fopen(ops_path.c_str(), "wb"));
  if (!out) throw std::runtime_error("cannot write " + ops_path + ": " + strerror(errno));
  OpsWriter writer(trace_path);
  const trace::ReadSummary read = trace::read_trace(trace_path, writer);
  if (!read.damage.spans.empty()) {
    const trace::DamagedSpan& first = read.damage.spans.front();
    throw std::runtime_error(fmt::format(
        "{} is damaged ({} bytes at offset {}: {}): the allocations and frees in them are lost, and a replay needs "
        "every one in order (a truncated trace, whose end alone is missing, is replayed up to there)",
        trace_path, read.damage.skipped_bytes(), first.offset, first.why));
  }
  ConversionSummary summary = writer.finish(out.get());
  if (read.truncated) summary.warnings.push_back(trace_path + " is truncated (" + read.truncation + "); replayed up to there");
  if (summary.unmatched_frees) {
    summary.warnings.push_back(fmt::format("{} frees of blocks the trace never saw allocated were left out",
                                           summary.unmatched_frees));
  }
  if (fflush(out.get()) != 0) throw std::runtime_error("cannot write " + ops_path + " (disk full?)");
  return summary;
}

}  // namespace memstage::replay
