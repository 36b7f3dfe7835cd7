#include "reports/render/html/page_stages.h"

#include <algorithm>
#include <unordered_map>

namespace memstage::reports {
namespace {

std::optional<DeviceFigures> merge_device(const std::optional<DeviceFigures>& into, const DeviceFigures& d) {
  if (!into) return d;
  DeviceFigures m = *into;
  if (d.peak_bytes > m.peak_bytes) {
    m.peak_bytes = d.peak_bytes;
    m.peak_time_s = d.peak_time_s;
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

PageStages::PageStages(const Report& report) : report_(report) {
  if (report.stages.size() <= kMaxPageStages) return;
  merged_ = true;
  row_of_.resize(report.stages.size());
  std::unordered_map<std::string, int> row_of_path;
  for (size_t i = 0; i < report.stages.size(); ++i) {
    const StageReport& s = report.stages[i];
    auto [it, first] = row_of_path.try_emplace(s.path, static_cast<int>(rows_.size()));
    row_of_[i] = it->second;
    if (first) {
      // Stages are sorted by start and a parent starts before its children: the parent's
      // row exists already.
      StageReport row = s;
      row.parent = s.parent >= 0 ? row_of_[s.parent] : -1;
      rows_.push_back(std::move(row));
      instances_.push_back(1);
      continue;
    }
    StageReport& row = rows_[it->second];
    ++instances_[it->second];
    MemoryFigures& m = row.figures;
    const MemoryFigures& f = s.figures;
    row.start_s = std::min(row.start_s, s.start_s);
    row.end_s = std::max(row.end_s, s.end_s);
    row.closed = row.closed && s.closed;
    row.retained_bytes += s.retained_bytes;
    if (f.peak_heap_bytes > m.peak_heap_bytes) {
      // The instance with the highest peak describes the row's peak: its time, what the
      // RSS was made of then, and the stacks holding memory.
      m.peak_heap_bytes = f.peak_heap_bytes;
      m.peak_heap_time_s = f.peak_heap_time_s;
      m.rss_breakdown = f.rss_breakdown;
      m.fragmentation = f.fragmentation;
      row.top_stacks_at_peak = s.top_stacks_at_peak;
    }
    m.peak_rss_bytes = std::max(m.peak_rss_bytes, f.peak_rss_bytes);
    m.peak_program_rss_bytes = std::max(m.peak_program_rss_bytes, f.peak_program_rss_bytes);
    m.tracer_peak_bytes = std::max(m.tracer_peak_bytes, f.tracer_peak_bytes);
    m.mmap_peak_bytes = std::max(m.mmap_peak_bytes, f.mmap_peak_bytes);
    m.allocations += f.allocations;
    m.frees += f.frees;
    m.bytes_allocated += f.bytes_allocated;
    m.temporary_allocations += f.temporary_allocations;
    m.leaked_bytes += f.leaked_bytes;
    m.leaked_blocks += f.leaked_blocks;
    if (s.device) row.device = merge_device(row.device, *s.device);
  }
}

}  // namespace memstage::reports
