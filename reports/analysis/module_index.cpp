#include "reports/analysis/module_index.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace memstage::reports {

ModuleIndex::ModuleIndex(const std::vector<std::vector<trace::Module>>& snapshots) {
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_path;
  snapshot_modules_.resize(snapshots.size());
  for (int s = 0; s < static_cast<int>(snapshots.size()); ++s) {
    for (const trace::Module& m : snapshots[s]) {
      auto& same_path = by_path[m.path];
      uint32_t id = kNone;
      for (uint32_t candidate : same_path) {
        const trace::Module& c = *loaded_[candidate].module;
        if (c.load_bias == m.load_bias &&
            std::equal(c.segments.begin(), c.segments.end(), m.segments.begin(), m.segments.end(),
                       [](const auto& a, const auto& b) { return a.start == b.start && a.end == b.end; })) {
          id = candidate;
          break;
        }
      }
      if (id == kNone) {
        id = static_cast<uint32_t>(loaded_.size());
        loaded_.push_back(LoadedModule{&m, {}});
        same_path.push_back(id);
        for (const auto& seg : m.segments) segments_.push_back(LoadedSegment{seg.start, seg.end, id});
      }
      snapshot_modules_[s].push_back(id);
      auto& runs = loaded_[id].present;
      if (!runs.empty() && runs.back().second >= s - 1) {
        runs.back().second = s;
      } else {
        runs.emplace_back(s, s);
      }
    }
  }
  std::sort(segments_.begin(), segments_.end(),
            [](const LoadedSegment& a, const LoadedSegment& b) { return a.start < b.start; });
  segment_end_max_.resize(segments_.size());
  uint64_t end_max = 0;
  for (size_t i = 0; i < segments_.size(); ++i) segment_end_max_[i] = end_max = std::max(end_max, segments_[i].end);
}

std::pair<uint32_t, uint32_t> ModuleIndex::candidates_of(uint64_t address) {
  auto [it, added] = candidates_by_address_.try_emplace(address);
  if (!added) return it->second;
  const auto first = static_cast<uint32_t>(candidates_.size());
  auto after = std::upper_bound(segments_.begin(), segments_.end(), address,
                                [](uint64_t a, const LoadedSegment& seg) { return a < seg.start; });
  for (size_t i = static_cast<size_t>(after - segments_.begin()); i-- > 0 && segment_end_max_[i] > address;) {
    if (segments_[i].end <= address) continue;
    if (std::find(candidates_.begin() + first, candidates_.end(), segments_[i].module) == candidates_.end()) {
      candidates_.push_back(segments_[i].module);
    }
  }
  it->second = {first, static_cast<uint32_t>(candidates_.size()) - first};
  return it->second;
}

int ModuleIndex::listed_from(uint32_t module, int snapshot) const {
  for (const auto& [first, last] : loaded_[module].present) {
    if (last >= snapshot) return std::max(first, snapshot);
  }
  return kNever;
}

uint32_t ModuleIndex::module_for(uint64_t address, int snapshot) {
  const auto [first, count] = candidates_of(address);
  uint32_t best = kNone;
  int best_at = kNever;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t c = candidates_[first + i];
    const int at = listed_from(c, snapshot);
    if (at < best_at) {
      best = c;
      best_at = at;
    } else if (at == best_at && at != kNever) {
      // Both listed there (overlapping segments): the list's order decides.
      for (uint32_t listed : snapshot_modules_[at]) {
        if (listed == best) break;
        if (listed == c) {
          best = c;
          break;
        }
      }
    }
  }
  return best;
}

}  // namespace memstage::reports
