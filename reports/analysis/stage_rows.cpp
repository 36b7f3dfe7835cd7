#include "reports/analysis/stage_rows.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace memstage::reports {
namespace {

std::optional<DeviceFigures> merge_device(const std::optional<DeviceFigures>& into, const DeviceFigures& d) {
  if (!into) return d;
  DeviceFigures m = *into;
  if (d.peak_bytes > m.peak_bytes) {
    m.peak_bytes = d.peak_bytes;
    m.peak_time_s = d.peak_time_s;
    m.top_stacks_at_peak = d.top_stacks_at_peak;
  }
  m.allocations += d.allocations;
  m.frees += d.frees;
  m.bytes_allocated += d.bytes_allocated;
  m.retained_bytes += d.retained_bytes;
  m.leaked_bytes += d.leaked_bytes;
  m.leaked_blocks += d.leaked_blocks;
  if (d.cache) m.cache = d.cache;  // the latest instance's
  return m;
}

}  // namespace

StageRows::StageRows(const std::vector<StageInstanceKey>& instances) {
  const size_t n = instances.size();
  row_of_.resize(n);
  grouped_ = n > kMaxUngroupedInstances;
  if (!grouped_) {
    for (size_t i = 0; i < n; ++i) {
      row_of_[i] = static_cast<int>(i);
      row_first_.push_back(i);
      row_peak_.push_back(i);
    }
  } else {
    // Each path's instance with the highest peak (the first of equals) is a row of its own.
    std::unordered_map<uint32_t, size_t> path_peak;
    for (size_t i = 0; i < n; ++i) {
      auto [it, first] = path_peak.try_emplace(instances[i].path, i);
      if (!first && instances[i].peak_heap_bytes > instances[it->second].peak_heap_bytes) it->second = i;
    }
    std::unordered_map<uint32_t, int> group_row;  // by path
    for (size_t i = 0; i < n; ++i) {
      const uint32_t path = instances[i].path;
      if (i < kFirstInstancesKept || path_peak[path] == i) {
        row_of_[i] = static_cast<int>(row_first_.size());
        row_first_.push_back(i);
        row_peak_.push_back(i);
        continue;
      }
      auto [it, first] = group_row.try_emplace(path, static_cast<int>(row_first_.size()));
      row_of_[i] = it->second;
      if (first) {
        row_first_.push_back(i);
        row_peak_.push_back(i);
      } else if (instances[i].peak_heap_bytes > instances[row_peak_[it->second]].peak_heap_bytes) {
        row_peak_[it->second] = i;
      }
    }
  }
  rows_.resize(row_first_.size());
  row_started_.assign(row_first_.size(), false);
}

void StageRows::add(size_t index, StageReport instance) {
  const int r = row_of_[index];
  StageReport& row = rows_[r];
  instance.parent = row_of(instance.parent);
  const double open_s = std::max(0.0, instance.end_s - instance.start_s);
  if (!row_started_[r]) {
    row_started_[r] = true;
    row = std::move(instance);
    row.instances = 1;
    row.open_s = open_s;
    return;
  }
  // A later instance of a group: its first set the row's name, path, parent and depth.
  ++row.instances;
  row.open_s += open_s;
  MemoryFigures& m = row.figures;
  const MemoryFigures& f = instance.figures;
  row.start_s = std::min(row.start_s, instance.start_s);
  row.end_s = std::max(row.end_s, instance.end_s);
  row.closed = row.closed && instance.closed;
  row.retained_bytes += instance.retained_bytes;
  if (row_peak_[r] == index) {
    m.peak_heap_bytes = f.peak_heap_bytes;
    m.peak_heap_time_s = f.peak_heap_time_s;
    m.rss_breakdown = f.rss_breakdown;
    m.fragmentation = f.fragmentation;
    row.top_stacks_at_peak = std::move(instance.top_stacks_at_peak);
  }
  m.peak_rss_bytes = std::max(m.peak_rss_bytes, f.peak_rss_bytes);
  row.peak_heap_increase_bytes = std::max(row.peak_heap_increase_bytes, instance.peak_heap_increase_bytes);
  row.peak_rss_increase_bytes = std::max(row.peak_rss_increase_bytes, instance.peak_rss_increase_bytes);
  m.peak_program_rss_bytes = std::max(m.peak_program_rss_bytes, f.peak_program_rss_bytes);
  m.tracer_peak_bytes = std::max(m.tracer_peak_bytes, f.tracer_peak_bytes);
  m.mmap_peak_bytes = std::max(m.mmap_peak_bytes, f.mmap_peak_bytes);
  m.allocations += f.allocations;
  m.frees += f.frees;
  m.bytes_allocated += f.bytes_allocated;
  m.temporary_allocations += f.temporary_allocations;
  m.leaked_bytes += f.leaked_bytes;
  m.leaked_blocks += f.leaked_blocks;
  if (instance.device) row.device = merge_device(row.device, *instance.device);
}

std::vector<StageReport> StageRows::take_rows() { return std::move(rows_); }

std::optional<StageGrouping> StageRows::grouping() const {
  if (!grouped_) return std::nullopt;
  StageGrouping g;
  g.instances = row_of_.size();
  g.rows = row_first_.size();
  g.ungrouped_limit = kMaxUngroupedInstances;
  g.first_kept = kFirstInstancesKept;
  g.note = fmt::format(
      "{} stage instances, more than {}: the first {} and each stage path's instance with the highest peak are "
      "listed on their own, and the other instances of a path are one row ({} rows in all): its peak is their "
      "highest (with that instance's time and stacks), its counts, retained and leaked bytes their sums",
      g.instances, g.ungrouped_limit, g.first_kept, g.rows);
  return g;
}

}  // namespace memstage::reports
