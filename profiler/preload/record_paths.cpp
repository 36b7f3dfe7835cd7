// The recording paths of the malloc family, the mmap family, device memory and the module
// list (recording.h): a stack captured and an event pushed into the thread's ring, and stats
// and sample modes' rarer parts of a counted call (tracer.h). Called by interpose*.cpp.
#include "profiler/preload/record_paths.h"

#include <link.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "profiler/preload/module_list.h"
#include "profiler/preload/python_frames.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/sample_records.h"
#include "profiler/preload/tracer.h"
#include "profiler/trace/trace_records.h"

namespace memstage::preload {
namespace {

namespace records = trace::records;

// The tracer's own code: leading frames inside it are dropped from every stack.
uint64_t g_own_text_start = 0;
uint64_t g_own_text_end = 0;

constexpr uint32_t kMaxUnwindFrames = 256 + 16;
// Native frames plus the Python frames merged into them.
constexpr uint32_t kMaxMergedFrames = LastStack::kMaxFrames;
constexpr uint64_t kSampleBeforeFreeBytes = 1u << 20;

bool own_address(uint64_t ip) { return ip >= g_own_text_start && ip < g_own_text_end; }

int find_own_text(dl_phdr_info* info, size_t, void*) {
  const uint64_t probe = reinterpret_cast<uint64_t>(&find_own_text);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (probe >= start && probe < start + ph.p_memsz) {
      g_own_text_start = start;
      g_own_text_end = start + ph.p_memsz;
      return 1;
    }
  }
  return 0;
}

// Inlined into its callers: every frame between the program and the walk's start is one
// more step for a frame that is dropped anyway. The walk (frame_walker.h) leaves what it
// cannot step exactly to libunwind.
__attribute__((always_inline)) inline uint32_t capture_stack(ThreadState* ts) {
  uint64_t frames[kMaxUnwindFrames];
  const uint32_t max_depth = g_tracer.options.max_depth;
  const int max_frames = static_cast<int>(max_depth + 16);
  // Python's frames come from the interpreter, not the walk: merged, they may differ.
  const bool python = python_frames_active();
  const bool reusable = ts->last_walk_stack != StackTable::kRootId && !python;
  int n = walk_frames(ts->walk_cache, walk_start_here(), frames, max_frames, !reusable);
  if (reusable && ts->walk_cache.repeated) return ts->last_walk_stack;
  const bool walked = n != kLeaveToLibunwind;
  if (!walked) n = unw_backtrace(reinterpret_cast<void**>(frames), max_frames);
  int first = 0;
  while (first < n && own_address(frames[first])) ++first;
  uint32_t depth = static_cast<uint32_t>(n - first);
  if (depth > max_depth) depth = max_depth;
  const uint64_t* ips = frames + first;
  uint64_t merged[kMaxMergedFrames];
  if (python) {
    depth = merge_python_frames(ips, depth, merged, kMaxMergedFrames);
    ips = merged;
  }
  const uint32_t stack = ts->last_stack.intern(g_tracer.stacks, ips, depth);
  ts->last_walk_stack = walked && !python ? stack : StackTable::kRootId;
  return stack;
}

// Sample mode: a sampled allocation is recorded as in full mode, with its stack, and its
// block marked so that its free is recorded too; and the free of a sampled block. Called
// without the re-entry guard (sample_alloc_rest, sample_free_rest): they set it, and keep
// errno.
void sampled_alloc(ThreadState* ts, void* p, size_t size, bool from_realloc) {
  RecordingGuard guard;
  if (!g_tracer.sampled_blocks.add(reinterpret_cast<uint64_t>(p))) {
    g_tracer.lost_events.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  KeepErrno keep;
  const uint32_t stack = capture_stack(ts);
  push_event(ts, from_realloc ? EventKind::kRealloc : EventKind::kAlloc, reinterpret_cast<uint64_t>(p), size, stack,
             true);
}
void sampled_free(ThreadState* ts, void* p) {
  RecordingGuard guard;
  KeepErrno keep;
  push_event(ts, EventKind::kFree, reinterpret_cast<uint64_t>(p), 0, 0, true);
}

}  // namespace

void find_own_code() { dl_iterate_phdr(find_own_text, nullptr); }

namespace {
// Whether the allocation the sampler's compare stopped at (alloc_counted<true>) is
// sampled. Its countdown is cut at checkpoints while no writer thread serves.
bool settle_sampler(ThreadState* ts, size_t size) {
  const int64_t checkpoint_bytes = writer_thread_running() ? 0 : kCheckpointBytes;
  if (__builtin_expect(ts->sampler.started(), 1)) return ts->sampler.settle(size, checkpoint_bytes);
  // The thread's first allocation: its own sequence of samples, begun here.
  {
    KeepErrno keep;
    const uint64_t seed = monotonic_ns() ^ (static_cast<uint64_t>(current_tid()) << 32) ^ reinterpret_cast<uint64_t>(ts);
    ts->sampler.start(g_tracer.options.sample_rate_bytes, seed * 0x9e3779b97f4a7c15ull, checkpoint_bytes);
  }
  return ts->sampler.sample(size, checkpoint_bytes);
}
}  // namespace

void sample_alloc_rest(ThreadState* ts, void* p, size_t size, bool from_realloc, unsigned due) {
  if (due & kFoldDue) fold_heap_bytes(ts);
  if (due & kSampledDue) {
    if (settle_sampler(ts, size)) {
      sampled_alloc(ts, p, size, from_realloc);
      serve_point();
    } else if (!writer_thread_running() && writer_round_due(monotonic_ns())) {
      // A checkpoint (one left over from before a writer thread started reads nothing of
      // the writer's: its round is its own): a serve point makes system calls (getpid,
      // gettid), where the clock is read in user space.
      serve_point();
    }
  }
}

void stats_alloc_rest(ThreadState* ts, unsigned due) {
  if (due & kFoldDue) fold_heap_bytes(ts);
  if (due & kServeDue) serve_point();
}

void sample_free_rest(ThreadState* ts, void* p, unsigned due) {
  if (due & kSampledDue) {
    switch (g_tracer.sampled_blocks.take(reinterpret_cast<uint64_t>(p))) {
      case SampledBlocks::Taken::kOwn:
        sampled_free(ts, p);
        break;
      case SampledBlocks::Taken::kInherited:
        // A forked child's free of its parent's block: not the child's heap, nor its free,
        // as full mode leaves out a free of a block its trace never saw (docs/jobs.md).
        ts->heap_unfolded_bytes += static_cast<int64_t>(live_block_usable_size(p));
        ts->frees.store(ts->frees.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        break;
      case SampledBlocks::Taken::kNone:
        break;
    }
  }
  if (due & kFoldDue) fold_heap_bytes(ts);
}

void note_own_block(void* p) {
  RecordingGuard guard;  // defers a signal whose handler would spin on the shard's lock
  g_tracer.own_blocks.add(reinterpret_cast<uint64_t>(p));
}

bool free_is_own(void* p) {
  RecordingGuard guard;
  const uint64_t address = reinterpret_cast<uint64_t>(p);
  if (g_tracer.own_blocks.take(address)) return true;
  // The table gave up since the block came: it may be the child's own, counted as before.
  if (!g_tracer.own_blocks.active()) return true;
  // The parent's sampled block: forgotten here too, so that a block of the child's own at
  // the same address later is not taken for it.
  if (sample_mode()) g_tracer.sampled_blocks.take(address);
  return false;
}

void record_alloc(void* p, size_t size, uint16_t call, bool from_realloc) {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  if (counting_mode()) return counted_alloc(ts, p, size, from_realloc);
  const size_t usable = live_block_usable_size(p);
  const uint32_t stack = capture_stack(ts);
  push_alloc_event(ts, from_realloc ? EventKind::kRealloc : EventKind::kAlloc, reinterpret_cast<uint64_t>(p), size, stack,
                   call);
  // After the event: a new high's serve point (note_live_bytes) then writes it too, where
  // a kill cannot take it (pending_buffers.h).
  track_live_bytes(ts, static_cast<int64_t>(usable));
}

bool record_free(void* p) {
  ThreadState* ts = current_thread_state();
  if (!ts) return true;
  if (counting_mode()) return counted_free(ts, p);
  const size_t usable = live_block_usable_size(p);
  // A large block goes back to the OS at once: sample RSS while it still counts.
  if (usable >= kSampleBeforeFreeBytes) push_rss(ts);
  track_live_bytes(ts, -static_cast<int64_t>(usable));
  push_event(ts, EventKind::kFree, reinterpret_cast<uint64_t>(p), 0, 0, true);
  return true;
}

void record_mmap(void* p, size_t length, bool reserved) {
  ThreadState* ts = current_thread_state();
  if (!ts || g_tracer.options.mode == trace::Mode::kStats) return;
  if (reserved) {
    push_record(ts, records::MmapReserved{reinterpret_cast<uint64_t>(p), length, capture_stack(ts)});
    return;
  }
  push_event(ts, EventKind::kMmap, reinterpret_cast<uint64_t>(p), length, capture_stack(ts));
}

void record_mprotect(void* p, size_t length, bool accessible) {
  ThreadState* ts = current_thread_state();
  if (!ts || g_tracer.options.mode == trace::Mode::kStats) return;
  push_record(ts, records::Mprotect{reinterpret_cast<uint64_t>(p), length, accessible ? 1u : 0u});
}

void record_munmap(void* p, size_t length) {
  ThreadState* ts = current_thread_state();
  if (!ts || g_tracer.options.mode == trace::Mode::kStats) return;
  if (length >= kSampleBeforeFreeBytes) push_rss(ts);
  push_event(ts, EventKind::kMunmap, reinterpret_cast<uint64_t>(p), length, 0);
}

void record_mremap(void* old_address, size_t old_length, void* new_address, size_t new_length) {
  ThreadState* ts = current_thread_state();
  if (!ts || g_tracer.options.mode == trace::Mode::kStats) return;
  push_record(ts, records::Mremap{reinterpret_cast<uint64_t>(old_address), old_length,
                                  reinterpret_cast<uint64_t>(new_address), new_length, capture_stack(ts)});
}

void record_device_alloc(uint64_t address, uint64_t bytes, trace::DeviceMemory kind) {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  push_record(ts, records::DeviceAlloc{trace_time_ns(), address, bytes, static_cast<uint64_t>(kind), capture_stack(ts)});
}

void record_device_free(uint64_t address, trace::DeviceMemory kind) {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  push_record(ts, records::DeviceFree{trace_time_ns(), address, static_cast<uint64_t>(kind)});
}

void record_device_cache(uint64_t reserved_bytes, uint64_t allocated_bytes) {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  push_record(ts, records::DeviceCache{trace_time_ns(), reserved_bytes, allocated_bytes});
}

void record_modules_changed() {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  constexpr uint32_t kModuleBytes = 1u << 20;
  auto* buf = static_cast<uint8_t*>(tracer_map(kModuleBytes));
  if (!buf) return;
  const uint32_t n = encode_modules(buf, kModuleBytes);
  if (n) push_encoded(ts, buf, n);
  tracer_unmap(buf, kModuleBytes);
}

void record_deep_bind_removed(const char* file) {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  constexpr size_t kMaxPath = 4096;
  uint8_t buf[1 + trace::kMaxVarintBytes + kMaxPath];
  const records::DeepBindRemoved record{std::string_view(file ? file : "", file ? strnlen(file, kMaxPath) : 0)};
  push_encoded(ts, buf, static_cast<uint32_t>(records::encode(buf, record) - buf));
}

}  // namespace memstage::preload
