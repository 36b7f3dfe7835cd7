// Device memory (CUDA) in a trace: the blocks the driver and runtime handed out, replayed
// in trace order beside the heap. Exact from every allocation and free the tracer saw;
// per stage the device peak, what the stage allocated and kept, and the caching
// allocator's reserved and allocated bytes when the program reported them (PyTorch).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/stage_ledger.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

class DeviceMemoryReplay {
 public:
  // Stage instances begin and end in the heap replay's order (FirstPass), which passes
  // the innermost open stage with each event.
  void begin_stage();
  void end_stage(int index, int parent);
  void allocate(const trace::DeviceAllocRecord& r, int stage);
  void free(uint64_t t_ns, uint64_t address, trace::DeviceMemory kind, int stage);
  void cache(uint64_t t_ns, uint64_t reserved_bytes, uint64_t allocated_bytes, int stage);

  // At the end of the trace: what each stage allocated and never freed.
  void count_leaks();

  bool used() const { return allocations_ > 0 || cache_samples_ > 0; }
  uint64_t unknown_frees() const { return unknown_frees_; }

  // The figures, stacks still as trace stack ids (the caller maps them).
  struct Block {
    uint64_t bytes = 0;
    uint32_t stack = 0;
    int stage = -1;
  };
  struct StageFigures {
    uint64_t peak_bytes = 0;
    uint64_t peak_ns = 0;
    uint64_t allocations = 0;
    uint64_t frees = 0;
    uint64_t bytes_allocated = 0;
    uint64_t retained_bytes = 0;
    uint64_t leaked_bytes = 0;
    uint64_t leaked_blocks = 0;
    std::optional<DeviceCache> cache;
    // How many logged events (allocations and frees) came before the stage's peak: the
    // blocks live after them are those held at it (live_after).
    uint64_t peak_event = 0;

    // A closed child's peak and the cache's highs are its parent's too.
    void absorb(const StageFigures& child);
  };
  const std::vector<StageFigures>& stages() const { return stages_.instances; }
  std::vector<StageFigures>& stages() { return stages_.instances; }
  DeviceFigures totals(double ns_per_s) const;
  // Blocks still live: the leaks.
  std::vector<Block> live_blocks() const;
  // The blocks live at the run's device peak (copied while fewer than 65,536 are live).
  const std::vector<Block>& at_peak() const { return at_peak_; }
  const std::vector<DeviceTimelinePoint>& timeline() const { return timeline_; }
  // The blocks live after each of `event_counts` logged events (a stage's peak_event), in
  // the order asked: one replay of the log, however many are asked. None where more than
  // 65,536 were live, as for at_peak().
  std::vector<std::vector<Block>> live_after(const std::vector<uint64_t>& event_counts) const;

 private:
  using Key = std::pair<bool, uint64_t>;  // (is a physical handle, address or handle)
  static Key key_of(uint64_t address, trace::DeviceMemory kind) {
    return {kind == trace::DeviceMemory::kPhysical, address};
  }
  void reach(uint64_t t_ns, int stage);
  // Device programs make few blocks (a caching allocator keeps large segments), so every
  // allocation and free is logged: the stacks at any stage's peak are a replay away.
  struct LoggedEvent {
    Key key;
    bool allocated;  // else freed
    Block block;
  };

  std::map<Key, Block> live_;
  uint64_t live_bytes_ = 0;
  uint64_t peak_bytes_ = 0, peak_ns_ = 0;
  uint64_t allocations_ = 0, frees_ = 0, bytes_allocated_ = 0, unknown_frees_ = 0;
  uint64_t cache_samples_ = 0;
  std::optional<DeviceCache> cache_;
  StageLedger<StageFigures> stages_;  // live device bytes per stage instance, as the heap's
  std::vector<Block> at_peak_;
  std::vector<DeviceTimelinePoint> timeline_;
  std::vector<LoggedEvent> log_;
};

}  // namespace memstage::reports
