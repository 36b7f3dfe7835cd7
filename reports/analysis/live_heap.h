// The blocks a program holds at one moment of its trace, replayed event by event.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace memstage::reports {

struct LiveBlock {
  uint64_t size = 0;
  uint32_t stack = 0;
  int32_t stage = -1;  // stage instance that was innermost when it was allocated
};

class LiveHeap {
 public:
  // An address already live lost its free somewhere (a block freed by a path the tracer
  // can't see): the old block is dropped and returned.
  std::optional<LiveBlock> allocate(uint64_t address, const LiveBlock& block) {
    std::optional<LiveBlock> replaced;
    auto [it, inserted] = blocks_.try_emplace(address, block);
    if (!inserted) {
      replaced = it->second;
      live_bytes_ -= it->second.size;
      it->second = block;
    }
    live_bytes_ += block.size;
    return replaced;
  }
  // The freed block, or nothing for an address this trace never saw allocated (freed
  // memory inherited over fork, or allocated before the tracer started).
  std::optional<LiveBlock> free(uint64_t address) {
    auto it = blocks_.find(address);
    if (it == blocks_.end()) return std::nullopt;
    LiveBlock b = it->second;
    live_bytes_ -= b.size;
    blocks_.erase(it);
    return b;
  }
  uint64_t live_bytes() const { return live_bytes_; }
  const std::unordered_map<uint64_t, LiveBlock>& blocks() const { return blocks_; }

 private:
  std::unordered_map<uint64_t, LiveBlock> blocks_;
  uint64_t live_bytes_ = 0;
};

}  // namespace memstage::reports
