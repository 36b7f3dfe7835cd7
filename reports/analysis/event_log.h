// The alloc and free events of a trace in their order, each as the allocation info it
// names, kept by pass one so that pass two (peak_snapshots.h) replays them from memory
// instead of reading, inflating and decoding the whole trace again.
// An event is a varint of its info id and whether it frees (1 byte for the first 64 infos,
// 3 up to 2^20): 4 bytes each filled the old bound with fresh pages before a churn's log
// was dropped (docs/performance.md). Kept up to a bound (64 MiB by
// default); the events of a longer trace are read again from the file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "profiler/trace/varint.h"

namespace memstage::reports {

class EventLog {
 public:
  // At most `max_bytes` (AnalysisOptions::max_event_log_bytes): past it the log is dropped.
  explicit EventLog(size_t max_bytes = size_t{64} << 20) : max_bytes_(max_bytes) {}

  void allocated(uint32_t info) { add(info, 0); }
  void freed(uint32_t info) { add(info, 1); }

  // Every event is in the log (none past the bound, no info id too large to keep).
  bool complete() const { return complete_; }

  // Hands the events to `visitor` (on_alloc, on_free, as the trace reader would) until its
  // done() says it needs no more.
  template <class Visitor>
  void replay(Visitor& visitor) const {
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const uint8_t* pos = blocks_[b].get();
      const uint8_t* const end = pos + (b + 1 == blocks_.size() ? last_block_bytes_ - block_left_ : block_used_[b]);
      while (pos < end) {
        if (visitor.done()) return;
        uint64_t e;
        trace::get_varint(pos, end, e);  // written whole by add()
        const uint32_t info = static_cast<uint32_t>(e >> 1);
        if (e & 1) {
          visitor.on_free(info, false);
        } else {
          visitor.on_alloc(info, false);
        }
      }
    }
  }

 private:
  // In blocks, so that a growing log is never copied (and its pages are touched once). The
  // first is small and each next one twice as large up to 1 MiB: a job of a thousand short
  // processes logs a few events each, and a first block of 1 MiB took a fresh huge page,
  // 2 MiB zeroed, per trace.
  static constexpr size_t kFirstBlockBytes = size_t{4} << 10;
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  static constexpr size_t kMaxEventBytes = 5;  // a varint of 32 bits

  // Inline, the common case: room in the block (none once dropped) and an id it can hold.
  void add(uint32_t info, uint32_t freed) {
    if (__builtin_expect(block_left_ < kMaxEventBytes || info >= (1u << 31), 0)) return add_past_block(info, freed);
    uint8_t* const end = trace::put_varint(cursor_, uint64_t{info} << 1 | freed);
    block_left_ -= static_cast<size_t>(end - cursor_);
    cursor_ = end;
  }
  [[gnu::noinline]] void add_past_block(uint32_t info, uint32_t freed) {
    if (!complete_) return;
    if (info >= (1u << 31)) return drop();
    if (next_block()) add(info, freed);
  }

  // The next block, or what is left of the bound.
  bool next_block() {
    const size_t next = blocks_.empty() ? kFirstBlockBytes : std::min(2 * last_block_bytes_, kBlockBytes);
    const size_t bytes = std::min(next, max_bytes_ - block_bytes_);
    if (bytes < kMaxEventBytes) {
      drop();
      return false;
    }
    if (!blocks_.empty()) block_used_.push_back(last_block_bytes_ - block_left_);
    blocks_.push_back(std::make_unique_for_overwrite<uint8_t[]>(bytes));
    block_bytes_ += bytes;
    last_block_bytes_ = block_left_ = bytes;
    cursor_ = blocks_.back().get();
    return true;
  }

  void drop() {
    complete_ = false;
    cursor_ = nullptr;
    block_left_ = 0;
    blocks_.clear();
    blocks_.shrink_to_fit();
    block_used_.clear();
    block_used_.shrink_to_fit();
  }

  size_t max_bytes_;
  std::vector<std::unique_ptr<uint8_t[]>> blocks_;
  std::vector<size_t> block_used_;  // bytes written in each block but the last
  size_t block_bytes_ = 0;          // the blocks' sizes added up
  size_t last_block_bytes_ = 0;
  uint8_t* cursor_ = nullptr;       // where the last block's next event goes
  size_t block_left_ = 0;           // bytes after it in its block
  bool complete_ = true;
};

}  // namespace memstage::reports
