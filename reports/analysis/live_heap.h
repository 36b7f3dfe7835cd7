// The memory a program holds at one moment of its trace, replayed event by event.
// The trace names blocks by allocation info, (size, stack, stage instance), so the live
// heap is a count of live blocks per info: exact, and as small as the distinct infos.
#pragma once

#include <cstdint>
#include <vector>

namespace memstage::reports {

struct AllocationInfo {
  uint64_t size = 0;
  uint32_t stack = 0;
  int32_t stage = -1;  // stage instance innermost at allocation, -1 outside any
};

class LiveHeap {
 public:
  void define(uint32_t id, const AllocationInfo& info) {
    if (id >= infos_.size()) {
      infos_.resize(id + 1);
      live_blocks_.resize(id + 1);
    }
    infos_[id] = info;
  }
  void allocate(uint32_t info) {
    ++live_blocks_[info];
    live_bytes_ += infos_[info].size;
  }
  // False when no block of this info is live (a corrupt trace): nothing changes.
  bool free(uint32_t info) {
    if (live_blocks_[info] == 0) return false;
    --live_blocks_[info];
    live_bytes_ -= infos_[info].size;
    return true;
  }
  uint64_t live_bytes() const { return live_bytes_; }
  const AllocationInfo& info(uint32_t id) const { return infos_[id]; }
  const std::vector<AllocationInfo>& infos() const { return infos_; }
  const std::vector<uint64_t>& live_blocks() const { return live_blocks_; }

 private:
  std::vector<AllocationInfo> infos_;
  std::vector<uint64_t> live_blocks_;  // per info
  uint64_t live_bytes_ = 0;
};

}  // namespace memstage::reports
