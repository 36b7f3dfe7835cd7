// The process's samples as trace records (sample_records.h): RSS, the allocator's figures,
// the memory shares, stats and sample modes' heap counters, and the heap highs that call
// for them between ticks.
#include "profiler/preload/sample_records.h"

#include "profiler/preload/samplers.h"
#include "profiler/trace/trace_records.h"

namespace memstage::preload {
namespace {

namespace records = trace::records;

// The tracer's own resident bytes cost a mincore walk of its mappings (0.1 ms and more):
// between two sampling ticks (stage boundaries can come by the thousand per second) the
// latest figure stands.
uint64_t tracer_bytes_at(uint64_t t_ns) {
  static std::atomic<uint64_t> measured_at_ns{0};
  static std::atomic<uint64_t> bytes{0};
  const uint64_t interval_ns = g_tracer.options.sample_interval_ms * 1'000'000ull;
  const uint64_t last = measured_at_ns.load(std::memory_order_relaxed);
  if (last != 0 && t_ns >= last && t_ns - last < interval_ns) return bytes.load(std::memory_order_relaxed);
  const uint64_t now = tracer_resident_bytes();
  bytes.store(now, std::memory_order_relaxed);
  measured_at_ns.store(t_ns ? t_ns : 1, std::memory_order_relaxed);
  return now;
}

template <class T>
void raise_to(std::atomic<T>& high, T value) {
  T seen = high.load(std::memory_order_relaxed);
  while (value > seen && !high.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

void push_rss_read(ThreadState* ts, uint64_t rss) {
  const uint64_t t_ns = trace_time_ns();
  const uint64_t tracer = tracer_bytes_at(t_ns);
  raise_to(g_tracer.rss_high_written_bytes, rss);
  push_record(ts, records::Rss{t_ns, rss, tracer});
  // The machine being played runs the program, not the tracer: its own memory is left out.
  const uint64_t program_rss = rss > tracer ? rss - tracer : 0;
  const uint64_t limit = g_tracer.options.ram_limit_bytes;
  if (limit && program_rss > limit && !g_tracer.ram_limit_passed.exchange(true)) {
    push_record(ts, records::RamLimit{t_ns, program_rss, limit});
    wake_writer();  // the writer stops the program once this is written
  }
}

}  // namespace

void push_rss(ThreadState* ts) {
  g_tracer.rss_sampled_at_ns.store(monotonic_ns(), std::memory_order_relaxed);
  push_rss_read(ts, read_rss_bytes());
}

void push_rss_if_high(ThreadState* ts) {
  g_tracer.rss_sampled_at_ns.store(monotonic_ns(), std::memory_order_relaxed);
  const uint64_t rss = read_rss_bytes();
  if (rss > g_tracer.rss_high_written_bytes.load(std::memory_order_relaxed)) push_rss_read(ts, rss);
}

void push_rss_high_water(ThreadState* ts) {
  const uint64_t high_water = read_rss_high_water_bytes();
  if (high_water) push_record(ts, records::RssHighWater{trace_time_ns(), high_water});
}

void note_live_bytes(ThreadState* ts, int64_t live) {
  const int64_t sampled = g_tracer.rss_sampled_at_live_bytes.load(std::memory_order_relaxed);
  const int64_t step = sampled / 64 > (1 << 20) ? sampled / 64 : (1 << 20);
  if (live > sampled + step) {
    g_tracer.rss_sampled_at_live_bytes.store(live, std::memory_order_relaxed);
    const uint64_t now = monotonic_ns();
    const uint64_t last = g_tracer.allocator_sampled_at_high_ns.load(std::memory_order_relaxed);
    const bool allocator_due = now - last >= g_tracer.options.sample_interval_ms * 1'000'000ull;
    if (allocator_due) g_tracer.allocator_sampled_at_high_ns.store(now, std::memory_order_relaxed);
    g_tracer.allocator_sample_pending.store(!allocator_due, std::memory_order_relaxed);
    push_samples(ts, allocator_due);
    // Without a writer thread, the samples of a new high (and a RAM limit passed) are
    // written now, not only after the next kServeEvery events; with one, this thread waits
    // for it to write them (and the allocation before them) where a SIGKILL cannot take
    // them (pending_buffers.h): a kill right after the wake came before the writer ran.
    serve_point();
    if (writer_thread_running() && !in_child_sharing_memory()) wait_for_writer_drain();
  }
}

void push_heap_counters(ThreadState* ts) {
  fold_heap_bytes(ts);
  const int64_t live = g_tracer.heap_live_bytes.load(std::memory_order_relaxed);
  const int64_t high = g_tracer.heap_high_bytes.exchange(live, std::memory_order_relaxed);
  const auto positive = [](int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; };
  push_record(ts, records::HeapCounters{trace_time_ns(), positive(live), positive(high > live ? high : live)});
  if (g_tracer.own_blocks.take_gave_up()) push_record(ts, records::InheritedFreesUntold{trace_time_ns()});
  push_counters(ts);
}

void fold_heap_bytes(ThreadState* ts) {
  RecordingGuard guard;
  KeepErrno keep;
  const int64_t unfolded = ts->heap_unfolded_bytes;
  const int64_t before = g_tracer.heap_live_bytes.fetch_add(unfolded, std::memory_order_relaxed);
  // The highest this thread took the heap to since its last fold, the others' changes as
  // they stood then.
  const int64_t high = before + ts->heap_unfolded_high_bytes;
  int64_t seen = g_tracer.heap_high_bytes.load(std::memory_order_relaxed);
  while (high > seen && !g_tracer.heap_high_bytes.compare_exchange_weak(seen, high, std::memory_order_relaxed)) {
  }
  ts->heap_unfolded_bytes = 0;
  ts->heap_unfolded_high_bytes = 0;
  if (unfolded > 0) note_live_bytes(ts, before + unfolded);
}

void push_samples(ThreadState* ts, bool with_allocator_stats, bool at_end) {
  if (counting_mode()) push_heap_counters(ts);
  push_rss(ts);
  MemoryShares shares;
  const uint64_t now_ns = trace_time_ns();
  const SharesMoment moment = at_end ? SharesMoment::kEnd
                              : with_allocator_stats ? SharesMoment::kEdge
                                                     : SharesMoment::kTick;
  if (read_memory_shares_if_due(now_ns, moment, shares)) {
    push_record(ts, records::MemoryShares{now_ns, shares.pss_bytes, shares.pss_anon_bytes, shares.pss_file_bytes,
                                          shares.pss_shmem_bytes, shares.shared_bytes, shares.private_bytes});
  }
  if (with_allocator_stats) {
    const AllocatorStats stats = read_allocator_stats();
    if (stats.valid) {
      push_record(ts, records::AllocatorStats{trace_time_ns(), stats.in_use_bytes, stats.resident_bytes,
                                              stats.mapped_bytes});
    }
  }
}

void push_counters(ThreadState* ts) {
  uint64_t allocations = 0, frees = 0, bytes = 0;
  const uint32_t n = g_tracer.thread_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    const ThreadState* t = g_tracer.threads[i];
    allocations += t->allocations.load(std::memory_order_relaxed);
    frees += t->frees.load(std::memory_order_relaxed);
    bytes += t->bytes_allocated.load(std::memory_order_relaxed);
  }
  push_record(ts, records::Counters{trace_time_ns(), allocations, frees, bytes});
}

}  // namespace memstage::preload
