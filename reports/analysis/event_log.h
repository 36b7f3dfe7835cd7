// The alloc and free events of a trace in their order, each as the allocation info it
// names (4 bytes an event), kept by pass one so that pass two (peak_snapshots.h) replays
// them from memory instead of reading, inflating and decoding the whole trace again:
// torch_small.py's trace is 2.2e6 events among 4e6 stack nodes and the module lists.
// Kept up to a bound (64 MiB by default); the events of a longer trace are read again from
// the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace memstage::reports {

class EventLog {
 public:
  // At most `max_events` (AnalysisOptions::max_logged_events): past it the log is dropped.
  explicit EventLog(size_t max_events = size_t{1} << 24) : max_events_(max_events) {}

  void allocated(uint32_t info) { add(info, 0); }
  void freed(uint32_t info) { add(info, 1); }

  // Every event is in the log (none past the bound, no info id too large to keep).
  bool complete() const { return complete_; }

  // Hands the events to `visitor` (on_alloc, on_free, as the trace reader would) until its
  // done() says it needs no more.
  template <class Visitor>
  void replay(Visitor& visitor) const {
    size_t left = events_;
    for (const auto& block : blocks_) {
      const size_t n = left < kBlockEvents ? left : kBlockEvents;
      for (size_t i = 0; i < n; ++i) {
        if (visitor.done()) return;
        const uint32_t e = block[i];
        if (e & 1) {
          visitor.on_free(e >> 1, false);
        } else {
          visitor.on_alloc(e >> 1, false);
        }
      }
      left -= n;
    }
  }

 private:
  // In blocks, so that a growing log is never copied (and its pages are touched once).
  static constexpr size_t kBlockEvents = size_t{1} << 18;  // 1 MiB

  void add(uint32_t info, uint32_t freed) {
    if (!complete_) return;
    if (events_ == max_events_ || info >= (1u << 31)) {
      complete_ = false;
      blocks_.clear();
      blocks_.shrink_to_fit();
      return;
    }
    if (events_ % kBlockEvents == 0) blocks_.push_back(std::make_unique_for_overwrite<uint32_t[]>(kBlockEvents));
    blocks_.back()[events_ % kBlockEvents] = info << 1 | freed;
    ++events_;
  }

  size_t max_events_;
  std::vector<std::unique_ptr<uint32_t[]>> blocks_;
  size_t events_ = 0;
  bool complete_ = true;
};

}  // namespace memstage::reports
