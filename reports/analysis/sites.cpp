#include "reports/analysis/sites.h"

#include <algorithm>

#include "reports/analysis/ascending_numbers.h"

namespace memstage::reports {
namespace {

uint64_t key_of(const StackStageFigures& f) { return figure_key(f.stack, f.stage); }

void add_figures(StackStageFigures& to, const StackStageFigures& f) {
  to.allocations += f.allocations;
  to.bytes_allocated += f.bytes_allocated;
  to.temporary_allocations += f.temporary_allocations;
  to.live_at_peak_bytes += f.live_at_peak_bytes;
  to.leaked_bytes += f.leaked_bytes;
}

}  // namespace

// The site's place in the sorted list (empty before finish()), or the list's size.
size_t SiteAggregator::listed(uint64_t key) const {
  const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), key,
                                   [](const StackStageFigures& f, uint64_t k) { return key_of(f) < k; });
  return it != sorted_.end() && key_of(*it) == key ? static_cast<size_t>(it - sorted_.begin()) : sorted_.size();
}

StackStageFigures& SiteAggregator::at(uint32_t stack, int stage) {
  const uint64_t key = figure_key(stack, stage);
  if (const size_t place = listed(key); place < sorted_.size()) return sorted_[place];
  StackStageFigures& f = unsorted_[key];
  f.stack = stack;
  f.stage = stage;
  return f;
}

void SiteAggregator::live_at_peak(std::span<const std::pair<uint64_t, uint64_t>> bytes_by_key) {
  size_t place = 0;
  for (const auto& [key, bytes] : bytes_by_key) {
    while (place < sorted_.size() && key_of(sorted_[place]) < key) ++place;
    if (place < sorted_.size() && key_of(sorted_[place]) == key) {
      sorted_[place].live_at_peak_bytes = bytes;
    } else {
      at(stack_of_key(key), stage_of_key(key)).live_at_peak_bytes = bytes;
    }
  }
}

StackStageFigures SiteAggregator::figures_of(uint32_t stack, int stage) const {
  const uint64_t key = figure_key(stack, stage);
  if (const size_t place = listed(key); place < sorted_.size()) return sorted_[place];
  const auto it = unsorted_.find(key);
  return it != unsorted_.end() ? it->second : StackStageFigures{stack, stage};
}

void SiteAggregator::flush_info(uint32_t id, const AllocationInfo& info) {
  if (id >= per_info_.size()) return;
  const InfoCounts n = std::exchange(per_info_[id], InfoCounts{});
  if (n.allocations == 0 && n.temporaries == 0) return;
  StackStageFigures& f = at(info.stack, info.stage);
  f.allocations += uint64_t{n.allocations} * blocks_counted(info, 1);
  f.bytes_allocated += uint64_t{n.allocations} * info.size;
  f.temporary_allocations += n.temporaries;
}

size_t SiteAggregator::stack_ids(const AllocationInfos& infos,
                                 std::span<const StackStageFigures> counted) const {
  size_t ids = 0;
  for (const StackStageFigures& f : counted) ids = std::max<size_t>(ids, size_t{f.stack} + 1);
  for (const auto& [key, f] : unsorted_) ids = std::max<size_t>(ids, size_t{stack_of_key(key)} + 1);
  if (!per_info_.empty()) ids = std::max(ids, infos.stacks_bound());
  return ids;
}

// Placed by stack (a count per stack, then each site in its stack's place), so that the
// list comes out grouped by stack without sorting it whole, and is allocated once. The
// counts are by the stacks' rank among the sites' (a bit a stack id to find it), not by
// stack id: the ids run over every node of the stack tree.
std::vector<StackStageFigures> SiteAggregator::sorted_sites(const AllocationInfos& infos,
                                                            std::span<const StackStageFigures> counted_sites) const {
  const size_t counted_infos = std::min(per_info_.size(), infos.size());
  const auto counted = [&](uint32_t id) { return per_info_[id].allocations || per_info_[id].temporaries; };
  const size_t ids = stack_ids(infos, counted_sites);
  AscendingNumbers rank(ids);
  {
    std::vector<bool> site(ids, false);
    for (const auto& [key, f] : unsorted_) site[stack_of_key(key)] = true;
    for (const StackStageFigures& f : counted_sites) site[f.stack] = true;
    for (uint32_t id = 0; id < counted_infos; ++id) {
      if (counted(id)) site[infos[id].stack] = true;
    }
    for (uint32_t stack = 0; stack < ids; ++stack) {
      if (site[stack]) rank.add(stack);
    }
  }
  std::vector<uint32_t> place(size_t{rank.size()} + 1, 0);
  for (const auto& [key, f] : unsorted_) ++place[rank.number_of(stack_of_key(key)) + 1];
  for (const StackStageFigures& f : counted_sites) ++place[rank.number_of(f.stack) + 1];
  for (uint32_t id = 0; id < counted_infos; ++id) {
    if (counted(id)) ++place[rank.number_of(infos[id].stack) + 1];
  }
  for (size_t i = 1; i < place.size(); ++i) place[i] += place[i - 1];
  std::vector<StackStageFigures> sites(place.back());
  for (const auto& [key, f] : unsorted_) sites[place[rank.number_of(f.stack)]++] = f;
  for (const StackStageFigures& f : counted_sites) sites[place[rank.number_of(f.stack)]++] = f;
  for (uint32_t id = 0; id < counted_infos; ++id) {
    if (!counted(id)) continue;
    const AllocationInfo& info = infos[id];
    StackStageFigures& f = sites[place[rank.number_of(info.stack)]++];
    f.stack = info.stack;
    f.stage = info.stage;
    f.allocations = uint64_t{per_info_[id].allocations} * blocks_counted(info, 1);
    f.bytes_allocated = uint64_t{per_info_[id].allocations} * info.size;
    f.temporary_allocations = per_info_[id].temporaries;
  }
  merge_equal_keys(sites);
  return sites;
}

void SiteAggregator::finish(const AllocationInfos& infos) {
  if (finished_) return;  // the counts are gone into sorted_: a second finish would drop them
  const auto by_key = [](const StackStageFigures& a, const StackStageFigures& b) { return key_of(a) < key_of(b); };
  if (per_info_.empty() && unsorted_.empty() && std::is_sorted(counted_.begin(), counted_.end(), by_key)) {
    sorted_ = std::move(counted_);  // aggregate mode's, the list itself: sorted_sites' order
    merge_equal_keys(sorted_);
  } else {
    sorted_ = sorted_sites(infos, counted_);
  }
  decltype(unsorted_)().swap(unsorted_);
  std::vector<StackStageFigures>().swap(counted_);
  per_info_ = decltype(per_info_)();
  finished_ = true;
}

void SiteAggregator::merge_equal_keys(std::vector<StackStageFigures>& grouped) {
  for (size_t begin = 0; begin < grouped.size();) {
    size_t end = begin + 1;
    while (end < grouped.size() && grouped[end].stack == grouped[begin].stack) ++end;
    if (end - begin > 1) {
      std::sort(grouped.begin() + static_cast<ptrdiff_t>(begin), grouped.begin() + static_cast<ptrdiff_t>(end),
                [](const auto& a, const auto& b) { return key_of(a) < key_of(b); });
    }
    begin = end;
  }
  size_t kept = 0;
  for (size_t i = 0; i < grouped.size(); ++i) {
    if (kept && key_of(grouped[kept - 1]) == key_of(grouped[i])) {
      add_figures(grouped[kept - 1], grouped[i]);
    } else {
      grouped[kept++] = grouped[i];
    }
  }
  grouped.resize(kept);
}

// Before finish(), marked by stack id: a flag a stack id, where sorting the infos' stacks
// would move them all.
std::vector<uint32_t> SiteAggregator::stacks(const AllocationInfos& infos) const {
  std::vector<uint32_t> out;
  if (!finished_) {
    std::vector<bool> site(stack_ids(infos, counted_), false);
    for (uint32_t id = 0; id < per_info_.size() && id < infos.size(); ++id) {
      if (per_info_[id].allocations || per_info_[id].temporaries) site[infos[id].stack] = true;
    }
    for (const auto& [key, f] : unsorted_) site[stack_of_key(key)] = true;
    for (const StackStageFigures& f : counted_) site[f.stack] = true;
    out.reserve(static_cast<size_t>(std::count(site.begin(), site.end(), true)));  // held through pass two
    for (uint32_t stack = 0; stack < site.size(); ++stack) {
      if (site[stack]) out.push_back(stack);
    }
    return out;
  }
  for (const StackStageFigures& f : sorted_) {
    if (out.empty() || out.back() != f.stack) out.push_back(f.stack);
  }
  if (unsorted_.empty()) return out;
  for (const auto& [key, f] : unsorted_) out.push_back(stack_of_key(key));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<StackStageFigures> SiteAggregator::take_sorted() {
  std::vector<StackStageFigures> out = std::move(sorted_);
  sorted_ = {};
  if (!unsorted_.empty()) {
    for (const auto& [key, f] : unsorted_) out.push_back(f);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return key_of(a) < key_of(b); });
    merge_equal_keys(out);
    decltype(unsorted_)().swap(unsorted_);
  }
  return out;
}

}  // namespace memstage::reports
