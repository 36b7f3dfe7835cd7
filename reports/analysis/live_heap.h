// The memory a program holds at one moment of its trace, replayed event by event.
// The trace names blocks by allocation info, (size, stack, stage instance), so the live
// heap is a count of live blocks per info: exact, and as small as the distinct infos.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "profiler/trace/block_vector.h"
#include "profiler/trace/sampling.h"

namespace memstage::reports {

struct AllocationInfo {
  uint64_t size = 0;  // bytes a block stands for: its size, or in sample mode its estimate
  uint32_t stack = 0;
  int32_t stage = -1;  // stage instance innermost at allocation, -1 outside any
  double blocks_per_block = 1;  // sample mode: how many allocations one sampled block stands for
};

// The info of a trace's kAllocInfo. In sample mode (sample_rate_bytes > 0) each block is
// a sample, weighted by the inverse of its chance to be sampled (trace/sampling.h), so
// that every sum of bytes or blocks made of them is an unbiased estimate.
inline AllocationInfo allocation_info(uint64_t size, uint32_t stack, int32_t stage, uint64_t sample_rate_bytes) {
  if (sample_rate_bytes == 0) return AllocationInfo{size, stack, stage, 1};
  return AllocationInfo{static_cast<uint64_t>(std::llround(trace::bytes_per_sample(size, sample_rate_bytes))), stack,
                        stage, trace::blocks_per_sample(size, sample_rate_bytes)};
}

// `blocks` live blocks of `info`, as allocations counted (estimated in sample mode).
inline uint64_t blocks_counted(const AllocationInfo& info, uint64_t blocks) {
  if (info.blocks_per_block == 1) return blocks;  // exact modes: no libm call an event
  return static_cast<uint64_t>(std::llround(static_cast<double>(blocks) * info.blocks_per_block));
}

// Every allocation info, by id: 16 bytes each, the sample weight held apart, only once
// a sampled info needs it (the exact modes' infos all weigh 1, and the weight in each was a
// third of the table). Read by value, weight included, as AllocationInfo.
class AllocationInfos {
 public:
  void define(uint32_t id, const AllocationInfo& info) {
    if (id >= infos_.size()) infos_.grow_to(id + 1, Stored{});
    infos_[id] = Stored{info.size, info.stack, info.stage};
    if (info.stack >= stacks_bound_) stacks_bound_ = size_t{info.stack} + 1;
    if (info.blocks_per_block != 1 && weights_.size() <= id) weights_.resize(id + 1, 1);
    if (id < weights_.size()) weights_[id] = info.blocks_per_block;
  }
  AllocationInfo operator[](size_t id) const {
    const Stored& s = infos_[id];
    return AllocationInfo{s.size, s.stack, s.stage, id < weights_.size() ? weights_[id] : 1};
  }
  // What a block of `id` stands for, read on every event.
  uint64_t bytes(size_t id) const { return infos_[id].size; }
  size_t size() const { return infos_.size(); }
  // Above every stack id an info was defined with: lists by stack id are sized by it
  // without a walk of the infos.
  size_t stacks_bound() const { return stacks_bound_; }
  // The room the doubling list of weights kept for more goes back (the infos' blocks keep
  // none past their last block).
  void shrink_to_fit() { weights_.shrink_to_fit(); }

 private:
  struct Stored {
    uint64_t size;
    uint32_t stack;
    int32_t stage;
  };
  // In blocks, where a doubling list touched about three times its size in fresh pages
  // as it grew and shrank (block_vector.h).
  trace::BlockVector<Stored> infos_;
  std::vector<double> weights_;  // by id up to the last sampled info defined; 1 past it
  size_t stacks_bound_ = 0;
};

class LiveHeap {
 public:
  void define(uint32_t id, const AllocationInfo& info) {
    if (id >= live_blocks_.size()) live_blocks_.resize(id + 1);
    infos_.define(id, info);
  }
  // Returns the live bytes after it.
  uint64_t allocate(uint32_t info) {
    ++live_blocks_[info];
    live_bytes_ += infos().bytes(info);
    return live_bytes_;
  }
  // False when no block of this info is live (a corrupt trace): nothing changes.
  bool free(uint32_t info) {
    if (live_blocks_[info] == 0) return false;
    --live_blocks_[info];
    live_bytes_ -= infos().bytes(info);
    return true;
  }
  uint64_t live_bytes() const { return live_bytes_; }
  // No more infos will come: the room the doubling lists kept for more (up to half their
  // size, held through pass two) is given back.
  void shrink_to_fit() {
    infos_.shrink_to_fit();
    live_blocks_.shrink_to_fit();
  }
  // No more events will come and the live counts were read: they go (allocate and free
  // may not be called after).
  void let_go_of_live_blocks() { std::vector<uint64_t>().swap(live_blocks_); }
  // Pass two replays pass one's log over pass one's infos, with live counts of its own:
  // the infos are lent for the replay, read where they are, not copied (24 MiB on a torch
  // import's trace, at the analysis's highest). `from` keeps them, unchanged until they are
  // given back (others may read them meanwhile); this heap defines none of its own.
  void borrow_infos(const LiveHeap& from) {
    lent_ = &from.infos_;
    live_blocks_.assign(lent_->size(), 0);
    live_bytes_ = 0;
  }
  void give_back_infos() { lent_ = nullptr; }
  AllocationInfo info(uint32_t id) const { return infos()[id]; }
  const AllocationInfos& infos() const { return lent_ ? *lent_ : infos_; }
  const std::vector<uint64_t>& live_blocks() const { return live_blocks_; }

 private:
  AllocationInfos infos_;
  const AllocationInfos* lent_ = nullptr;  // another heap's, while borrowed
  std::vector<uint64_t> live_blocks_;  // per info
  uint64_t live_bytes_ = 0;
};

}  // namespace memstage::reports
