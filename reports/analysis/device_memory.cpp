#include "reports/analysis/device_memory.h"

#include <algorithm>

namespace memstage::reports {

namespace {
// Blocks live at a new device peak are copied while there are fewer than this many; a
// program holding more at once gets the run's top device stacks from the last copy.
constexpr size_t kMaxBlocksCopiedAtPeak = 1u << 16;
}  // namespace

void DeviceMemoryReplay::begin_stage() {
  StageFigures s;
  s.peak_bytes = live_bytes_;
  s.peak_event = log_.size();
  stages_.add_instance(s);
}

void DeviceMemoryReplay::end_stage(int index, int parent) { stages_.close_instance(index, parent); }

void DeviceMemoryReplay::StageFigures::absorb(const StageFigures& child) {
  if (child.peak_bytes > peak_bytes) {
    peak_bytes = child.peak_bytes;
    peak_ns = child.peak_ns;
    peak_event = child.peak_event;
  }
  if (child.cache) {
    DeviceCache& pc = cache ? *cache : cache.emplace(*child.cache);
    pc.peak_reserved_bytes = std::max(pc.peak_reserved_bytes, child.cache->peak_reserved_bytes);
    pc.peak_allocated_bytes = std::max(pc.peak_allocated_bytes, child.cache->peak_allocated_bytes);
  }
}

void DeviceMemoryReplay::reach(uint64_t t_ns, int stage) {
  timeline_.push_back(DeviceTimelinePoint{t_ns / trace::kNsPerS, live_bytes_, stage});
  if (live_bytes_ > peak_bytes_) {
    peak_bytes_ = live_bytes_;
    peak_ns_ = t_ns;
    if (live_.size() <= kMaxBlocksCopiedAtPeak) {
      at_peak_.clear();
      for (const auto& [key, block] : live_) at_peak_.push_back(block);
    }
  }
  if (stage >= 0 && live_bytes_ > stages_.instances[stage].peak_bytes) {
    stages_.instances[stage].peak_bytes = live_bytes_;
    stages_.instances[stage].peak_ns = t_ns;
    stages_.instances[stage].peak_event = log_.size();
  }
}

void DeviceMemoryReplay::allocate(const trace::DeviceAllocRecord& r, int stage) {
  const Key key = key_of(r.address, r.kind);
  if (auto it = live_.find(key); it != live_.end()) {
    // The tracer missed its free (made where it does not look): the address is reused.
    live_bytes_ -= it->second.bytes;
    stages_.add_live(it->second.stage, -static_cast<int64_t>(it->second.bytes));
    live_.erase(it);
    log_.push_back(LoggedEvent{key, false, Block{}});
    ++unknown_frees_;
  }
  live_[key] = Block{r.bytes, r.stack, stage};
  log_.push_back(LoggedEvent{key, true, Block{r.bytes, r.stack, stage}});
  live_bytes_ += r.bytes;
  ++allocations_;
  bytes_allocated_ += r.bytes;
  if (stage >= 0) {
    StageFigures& s = stages_.instances[stage];
    ++s.allocations;
    s.bytes_allocated += r.bytes;
    stages_.add_live(stage, static_cast<int64_t>(r.bytes));
  }
  reach(r.t_ns, stage);
}

void DeviceMemoryReplay::free(uint64_t t_ns, uint64_t address, trace::DeviceMemory kind, int stage) {
  auto it = live_.find(key_of(address, kind));
  if (it == live_.end()) {
    ++unknown_frees_;
    return;
  }
  live_bytes_ -= it->second.bytes;
  stages_.add_live(it->second.stage, -static_cast<int64_t>(it->second.bytes));
  live_.erase(it);
  log_.push_back(LoggedEvent{key_of(address, kind), false, Block{}});
  ++frees_;
  if (stage >= 0) ++stages_.instances[stage].frees;
  timeline_.push_back(DeviceTimelinePoint{t_ns / trace::kNsPerS, live_bytes_, stage});
}

void DeviceMemoryReplay::cache(uint64_t t_ns, uint64_t reserved_bytes, uint64_t allocated_bytes, int stage) {
  ++cache_samples_;
  DeviceCache c = cache_.value_or(DeviceCache{});
  c.t_ns = t_ns;
  c.reserved_bytes = reserved_bytes;
  c.allocated_bytes = allocated_bytes;
  c.peak_reserved_bytes = std::max(c.peak_reserved_bytes, reserved_bytes);
  c.peak_allocated_bytes = std::max(c.peak_allocated_bytes, allocated_bytes);
  cache_ = c;
  if (stage >= 0) {
    StageFigures& s = stages_.instances[stage];
    DeviceCache sc = s.cache.value_or(DeviceCache{});
    sc.t_ns = t_ns;
    sc.reserved_bytes = reserved_bytes;
    sc.allocated_bytes = allocated_bytes;
    sc.peak_reserved_bytes = std::max(sc.peak_reserved_bytes, reserved_bytes);
    sc.peak_allocated_bytes = std::max(sc.peak_allocated_bytes, allocated_bytes);
    s.cache = sc;
  }
}

void DeviceMemoryReplay::count_leaks() {
  for (const auto& [key, block] : live_) {
    if (block.stage < 0) continue;
    stages_.instances[block.stage].leaked_bytes += block.bytes;
    ++stages_.instances[block.stage].leaked_blocks;
  }
}

DeviceFigures DeviceMemoryReplay::totals(double ns_per_s) const {
  DeviceFigures f;
  f.peak_bytes = peak_bytes_;
  f.peak_time_s = peak_ns_ / ns_per_s;
  f.allocations = allocations_;
  f.frees = frees_;
  f.bytes_allocated = bytes_allocated_;
  for (const auto& [key, block] : live_) {
    f.leaked_bytes += block.bytes;
    ++f.leaked_blocks;
  }
  f.cache = cache_;
  return f;
}

std::vector<std::vector<DeviceMemoryReplay::Block>> DeviceMemoryReplay::live_after(
    const std::vector<uint64_t>& event_counts) const {
  std::vector<size_t> order(event_counts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return event_counts[a] < event_counts[b]; });
  std::vector<std::vector<Block>> out(event_counts.size());
  std::map<Key, Block> live;
  uint64_t replayed = 0;
  for (size_t i : order) {
    for (; replayed < event_counts[i] && replayed < log_.size(); ++replayed) {
      const LoggedEvent& e = log_[replayed];
      if (e.allocated) live[e.key] = e.block;
      else live.erase(e.key);
    }
    // As at the run's peak: past so many live blocks, none are copied (no stacks for it).
    if (live.size() > kMaxBlocksCopiedAtPeak) continue;
    out[i].reserve(live.size());
    for (const auto& [key, block] : live) out[i].push_back(block);
  }
  return out;
}

std::vector<DeviceMemoryReplay::Block> DeviceMemoryReplay::live_blocks() const {
  std::vector<Block> out;
  out.reserve(live_.size());
  for (const auto& [key, block] : live_) out.push_back(block);
  return out;
}

}  // namespace memstage::reports
