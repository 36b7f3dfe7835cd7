#include "profiler/preload/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_customMem: zstd works in the tracer's memory
#include <zstd.h>

#include <cstdio>
#include <cstring>

#include "profiler/preload/address_index.h"
#include "profiler/preload/aggregate.h"
#include "profiler/preload/descriptors.h"
#include "profiler/preload/fatal_signals.h"
#include "profiler/preload/allocation_infos.h"
#include "profiler/preload/futex.h"
#include "profiler/preload/module_list.h"
#include "profiler/preload/pending_buffers.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/recording_core.h"
#include "profiler/preload/sample_records.h"
#include "profiler/preload/samplers.h"
#include "profiler/trace/trace_format.h"
#include "profiler/trace/trace_records.h"

namespace memstage::preload {
namespace {

namespace records = trace::records;
using trace::Tag;

constexpr size_t kRawBytes = 2u << 20;          // one chunk's records, at most (> a module list)
constexpr size_t kFlushAtRawBytes = 1u << 20;   // write a chunk once this much is waiting
constexpr uint64_t kFlushEveryNs = 50'000'000;  // ...or this long after the last write
constexpr size_t kWriterStackBytes = 512u << 10;   // drain's arrays take 64 KiB of it
// How long a flush from a signal handler waits for the writer's lock or a chunk being
// written: the writer finishes a round within milliseconds, and a crash inside the
// tracer's own threads must not hang the dying process.
constexpr uint64_t kSignalPatienceNs = 200'000'000;

struct WriterState {
  OwnedDescriptor trace;  // the trace file (descriptors.h)
  uint64_t trace_bytes = 0;  // its length: what write_all wrote to it
  char path[kMaxOutputDirBytes + 64] = {};
  pthread_t thread{};
  std::atomic<bool> stop{false};
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;  // one drain/write at a time
  std::atomic<pid_t> mutex_owner{0};

  ZSTD_CCtx* zstd = nullptr;
  uint8_t* raw = nullptr;
  size_t raw_used = 0;
  std::atomic<uint64_t> own_fill{0};
  std::atomic<uint64_t>* raw_fill = &own_fill;  // raw_used where a kill leaves it (pending_buffers.h)
  uint8_t* compressed = nullptr;
  size_t compressed_capacity = 0;
  uint8_t* spare_raw = nullptr;  // the compressor's while it writes a chunk (ChunkCompressor)

  AddressIndex live_blocks;  // address -> allocation info id
  AllocationInfos infos;
  HeapAggregate aggregate;  // aggregate mode's figures, in place of the events
  uint64_t next_snapshot_ns = 0;
  // The latest allocation, for kFreeLast and kTemporary.
  uint64_t last_alloc_address = 0;
  bool last_event_was_alloc = false;
  // Its kAlloc record's tag in `raw`, while nothing was written after it (raw_used then is
  // last_alloc_end): a free coming next turns it into a kTemporary. Null once a chunk went.
  uint8_t* last_alloc_tag = nullptr;
  size_t last_alloc_end = 0;
  // The thread (ring) of the allocation events written last in this chunk (kThread):
  // kNoThread first in each chunk, so that a reader that skips one still knows it.
  static constexpr uint32_t kNoThread = UINT32_MAX;
  uint32_t thread_written = kNoThread;
  // Stage instances as the reader will number them: by the order they begin.
  uint32_t stage_instances = 0;
  uint32_t open_stage_instances[Tracer::kMaxStageDepth] = {};
  uint32_t open_stage_depth = 0;
  uint32_t open_stage_names[Tracer::kMaxStageDepth] = {};
  uint32_t stage_names_written = 0;
  uint32_t stack_nodes_written = 0;
  records::OpenStage chunk_start_stages[Tracer::kMaxStageDepth] = {};  // begin_chunk's
  EventMerge merge;  // the rings' order (event_order.h)
  uint64_t lost_written = 0;
  uint64_t last_write_ns = 0;
  uint64_t events_at_last_tick = ~0ull;
  bool helper_woken_for_growth = false;
  std::atomic<bool> write_failed{false};
};
WriterState w;

// The chunks' compression and writing, on a thread of its own beside the writer thread:
// the writer hands it a full raw buffer and drains on into the other. Compressing took a
// fifth of the writer's time, and the writer is what the program's threads wait for when
// they allocate faster than it drains (docs/performance.md). Without the thread (before the program's
// second thread, in a fork's child until it makes one) chunks are compressed where they
// are written.
struct ChunkCompressor {
  pthread_t thread{};
  std::atomic<bool> running{false};
  std::atomic<bool> stop{false};
  std::atomic<pid_t> tid{0};
  // 1 while a chunk is handed over and not written yet; the futex both sides wait on.
  std::atomic<uint32_t> busy{0};
  const uint8_t* chunk = nullptr;  // the raw records handed over, and their length
  size_t chunk_bytes = 0;
};
ChunkCompressor compressor;
constexpr size_t kCompressorStackBytes = 256u << 10;

void* zstd_alloc(void*, size_t bytes) {
  auto* p = static_cast<uint64_t*>(tracer_map(bytes + 16));
  if (!p) return nullptr;
  p[0] = bytes + 16;
  return p + 2;
}
void zstd_free(void*, void* address) {
  if (!address) return;
  auto* p = static_cast<uint64_t*>(address) - 2;
  tracer_unmap(p, p[0]);
}

pid_t gettid_raw() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void lock_writer() {
  pthread_mutex_lock(&w.mutex);
  w.mutex_owner.store(gettid_raw(), std::memory_order_relaxed);
}
bool try_lock_writer_for(uint64_t patience_ns) {
  if (w.mutex_owner.load(std::memory_order_relaxed) == gettid_raw()) return false;
  const uint64_t deadline = monotonic_ns() + patience_ns;
  while (pthread_mutex_trylock(&w.mutex) != 0) {
    if (monotonic_ns() > deadline) return false;
    sched_yield();
  }
  w.mutex_owner.store(gettid_raw(), std::memory_order_relaxed);
  return true;
}
void unlock_writer() {
  w.mutex_owner.store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(&w.mutex);
}

// The program may have closed the trace's descriptor (closefrom), and it or the tracer
// may have been handed its number since: then the file is opened again, at its end;
// whatever the number is now is left alone.
bool trace_fd_usable() {
  if (w.trace.fd < 0) return false;
  if (still_owned(w.trace)) return true;
  release_descriptor(w.trace);
  w.trace = adopt_descriptor(static_cast<int>(syscall(SYS_openat, AT_FDCWD, w.path, O_WRONLY | O_APPEND | O_CLOEXEC)));
  return w.trace.fd >= 0;
}

bool write_all(const uint8_t* data, size_t n) {
  if (!trace_fd_usable()) return false;
  while (n > 0) {
    const long r = syscall(SYS_write, w.trace.fd, data, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += r;
    n -= static_cast<size_t>(r);
    w.trace_bytes += static_cast<uint64_t>(r);
  }
  return true;
}

// Compresses `bytes` raw bytes of records and writes them as one chunk.
void compress_and_write(const uint8_t* raw, size_t bytes) {
  if (w.trace.fd < 0 || w.write_failed.load(std::memory_order_relaxed)) return;
  auto* header = reinterpret_cast<trace::ChunkHeader*>(w.compressed);
  const size_t n =
      ZSTD_compress2(w.zstd, w.compressed + sizeof(*header), w.compressed_capacity - sizeof(*header), raw, bytes);
  if (ZSTD_isError(n)) return;
  *header = trace::ChunkHeader{trace::kChunkMagic, static_cast<uint32_t>(n), static_cast<uint32_t>(bytes)};
  // One write per chunk, so a kill leaves whole chunks and at most one partial one.
  if (!write_all(w.compressed, sizeof(*header) + n)) {
    w.write_failed.store(true, std::memory_order_relaxed);
    return;
  }
  pending_written(raw, w.trace_bytes);
}

// The compressor thread still writes the chunk handed to it.
bool compressor_busy() {
  return compressor.running.load(std::memory_order_acquire) && compressor.busy.load(std::memory_order_acquire) != 0;
}

// Waits until the chunk handed to the compressor is written (at most `patience_ns`; a
// signal handler on the compressor's own thread does not wait for itself). True once it is.
bool wait_for_chunks_written(uint64_t patience_ns = ~0ull) {
  if (compressor.busy.load(std::memory_order_acquire) == 0) return true;
  if (compressor.tid.load(std::memory_order_relaxed) == gettid_raw()) return false;
  const uint64_t deadline = patience_ns == ~0ull ? ~0ull : monotonic_ns() + patience_ns;
  while (compressor.busy.load(std::memory_order_acquire) != 0 && monotonic_ns() < deadline) {
    futex_wait(&compressor.busy, 1, 10'000'000);
  }
  return compressor.busy.load(std::memory_order_acquire) == 0;
}

void* compressor_main(void*) {
  t_thread.in_tracer = true;  // zstd's memory is the tracer's (zstd_alloc), nothing else allocates
  compressor.tid.store(gettid_raw(), std::memory_order_relaxed);
  for (;;) {
    while (compressor.busy.load(std::memory_order_acquire) == 0) {
      if (compressor.stop.load(std::memory_order_acquire)) return nullptr;
      // Between chunks, a slice at a time, the stack table's next index (stack_table.h).
      if (g_tracer.stacks.build_ahead()) continue;
      futex_wait(&compressor.busy, 0, 100'000'000);
    }
    compress_and_write(compressor.chunk, compressor.chunk_bytes);
    compressor.busy.store(0, std::memory_order_release);
    futex_wake(&compressor.busy, INT32_MAX);
  }
}

// Writes the waiting records as one chunk: handed to the compressor thread where it runs,
// once the chunk handed over before is written (chunks stay in order); compressed here
// where it does not. `patience_ns`: how long to wait for that earlier chunk (a signal
// handler's flush must not hang a dying process); past it this chunk is lost.
void write_chunk(uint64_t patience_ns = ~0ull) {
  if (w.raw_used == 0) return;
  w.last_alloc_tag = nullptr;  // in the chunk that goes now
  w.last_write_ns = monotonic_ns();
  if (!wait_for_chunks_written(patience_ns)) {
    w.raw_used = 0;
    w.raw_fill->store(0, std::memory_order_release);
    return;
  }
  if (compressor.running.load(std::memory_order_acquire)) {
    compressor.chunk = w.raw;
    compressor.chunk_bytes = w.raw_used;
    uint8_t* const next = w.spare_raw;
    w.spare_raw = w.raw;
    w.raw = next;
    w.raw_used = 0;
    w.raw_fill = pending_next_chunk(w.raw);
    compressor.busy.store(1, std::memory_order_release);
    futex_wake(&compressor.busy, INT32_MAX);
    return;
  }
  compress_and_write(w.raw, w.raw_used);
  w.raw_used = 0;
  w.raw_fill = pending_next_chunk(w.raw);
}

// Every chunk opens with the counts of what the records before it defined (kChunkStart),
// so that a reader can read on after a damaged chunk (trace_format.h).
void begin_chunk() {
  for (uint32_t i = 0; i < w.open_stage_depth; ++i) {
    w.chunk_start_stages[i] = records::OpenStage{w.open_stage_instances[i], w.open_stage_names[i]};
  }
  records::ChunkStart start;
  start.next_stack_node = w.stack_nodes_written ? w.stack_nodes_written : 1;  // the root, node 0, is implicit
  start.next_alloc_info = w.infos.count();
  start.next_stage_name = w.stage_names_written;
  start.next_stage_instance = w.stage_instances;
  start.open_stages.items = std::span<const records::OpenStage>(w.chunk_start_stages, w.open_stage_depth);
  w.raw_used = static_cast<size_t>(records::encode(w.raw, start) - w.raw);
  w.thread_written = WriterState::kNoThread;
}

// Room for `bytes` more raw bytes, writing a chunk first if needed.
uint8_t* reserve(size_t bytes) {
  if (w.raw_used + bytes > kRawBytes - records::kMaxChunkStartBytes) write_chunk();
  if (w.raw_used == 0) begin_chunk();
  return w.raw + w.raw_used;
}
void commit(uint8_t* end) {
  w.raw_used = static_cast<size_t>(end - w.raw);
  w.raw_fill->store(w.raw_used, std::memory_order_release);  // whole records only: a kill keeps them
}

// The aggregate writes its records through this.
class RawBufferSink final : public RecordSink {
 public:
  uint8_t* reserve(size_t bytes) override { return ::memstage::preload::reserve(bytes); }
  void commit(uint8_t* end) override { ::memstage::preload::commit(end); }
};
RawBufferSink raw_sink;

bool aggregate_mode() { return g_tracer.options.mode == trace::Mode::kAggregate; }

void append_record(const uint8_t* bytes, size_t n) {
  if (n > kRawBytes - records::kMaxChunkStartBytes) return;
  uint8_t* out = reserve(n);
  memcpy(out, bytes, n);
  commit(out + n);
}

void write_new_stack_nodes() {
  const StackTable& stacks = g_tracer.stacks;
  const uint32_t published = stacks.published();
  for (; w.stack_nodes_written < published; ++w.stack_nodes_written) {
    const uint32_t id = w.stack_nodes_written;
    if (id == StackTable::kRootId) continue;  // implicit in every trace
    const uint32_t parent = stacks.parent(id);
    records::StackNode record;
    record.parent_distance = id - parent;
    record.address_delta = static_cast<int64_t>(stacks.return_address(id) - stacks.return_address(parent));
    commit(records::encode(reserve(records::max_encoded_bytes(record)), record));
  }
}

// Follows stage names, begins and ends (which arrive as ready records) to know the stage
// instance of each allocation, once the record is in the chunk (a chunk's kChunkStart counts
// only the records before it). In aggregate mode the aggregate follows them too.
void track_stages(const uint8_t* record, uint32_t length) {
  if (length == 0) return;
  if (record[0] == static_cast<uint8_t>(Tag::kStageName)) {
    ++w.stage_names_written;
  } else if (record[0] == static_cast<uint8_t>(Tag::kStageBegin)) {
    records::FieldSource source(record + 1, record + length);
    records::StageBegin begin;
    records::decode(source, begin);
    if (w.open_stage_depth < Tracer::kMaxStageDepth) {
      w.open_stage_names[w.open_stage_depth] = static_cast<uint32_t>(begin.name_id);
      w.open_stage_instances[w.open_stage_depth++] = w.stage_instances;
    }
    if (aggregate_mode()) w.aggregate.stage_begin(w.stage_instances);
    ++w.stage_instances;
  } else if (record[0] == static_cast<uint8_t>(Tag::kStageEnd) && w.open_stage_depth > 0) {
    --w.open_stage_depth;
  }
}
// Aggregate mode: a stage's figures are written before its end record.
void before_stage_record(const uint8_t* record, uint32_t length) {
  if (length > 0 && record[0] == static_cast<uint8_t>(Tag::kStageEnd) && w.open_stage_depth > 0 &&
      aggregate_mode()) {
    w.aggregate.stage_end(raw_sink);
  }
}

// Aggregate mode: the event is folded into the aggregate, nothing is written for it.
void aggregate_event(const RawEvent& e) {
  if (e.kind == EventKind::kFree) {
    const bool temporary = w.last_event_was_alloc && e.a == w.last_alloc_address;
    if (w.aggregate.free(e.a, temporary)) w.last_event_was_alloc = false;
    return;
  }
  const uint32_t stage_plus_one = w.open_stage_depth ? w.open_stage_instances[w.open_stage_depth - 1] + 1 : 0;
  if (!w.aggregate.allocate(e.a, e.b, e.stack_or_length, stage_plus_one, raw_sink)) {
    g_tracer.lost_events.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  w.last_alloc_address = e.a;
  w.last_event_was_alloc = true;
}

// An event of ready records, `e.stack_or_length` bytes in the ring's slots after it: a case
// of write_event, inlined into it (the drain's machine code as it was).
__attribute__((always_inline)) inline void write_encoded_event(const EventRing& ring, uint64_t index,
                                                               const RawEvent& e) {
  const auto* record = static_cast<const uint8_t*>(static_cast<const void*>(&ring.at(index + 1)));
  before_stage_record(record, e.stack_or_length);
  const bool ram_limit = e.stack_or_length > 0 && record[0] == static_cast<uint8_t>(Tag::kRamLimit);
  // The payload may wrap around the ring's end: copy it slot by slot.
  uint32_t left = e.stack_or_length;
  uint8_t* const copy = reserve(left);
  uint8_t* out = copy;
  for (uint64_t slot = index + 1; left > 0; ++slot) {
    const uint32_t n = left < sizeof(RawEvent) ? left : sizeof(RawEvent);
    memcpy(out, &ring.at(slot), n);
    out += n;
    left -= n;
  }
  commit(out);
  track_stages(copy, e.stack_or_length);  // the copy: the ring's may wrap around
  if (ram_limit && aggregate_mode()) w.aggregate.ram_limit(raw_sink);
}

// The kThread of note_thread, out of line: the thread changes every few hundred events.
__attribute__((noinline)) uint8_t* write_thread(uint8_t* out, uint32_t thread) {
  if (sample_mode()) return out;
  w.thread_written = thread;
  return records::encode(out, records::Thread{thread});
}
// Full mode: a kThread where the allocation events' thread changes, at `out`, in room the
// caller reserved (the check after the reserve: a chunk begun there asks for it again).
// Inlined: called, it cost the writer ~8 instructions an event in callgrind's count.
__attribute__((always_inline)) inline uint8_t* note_thread(uint8_t* out, uint32_t thread) {
  return __builtin_expect(thread == w.thread_written, 1) ? out : write_thread(out, thread);
}

// Full mode defines an info with its call (kCallAllocInfo), sample mode without.
uint8_t* encode_alloc_info(uint8_t* out, const RawEvent& e, uint32_t stage_plus_one) {
  if (sample_mode()) return records::encode(out, records::AllocInfo{e.b, e.stack_or_length, stage_plus_one});
  return records::encode(out, records::CallAllocInfo{e.b, e.stack_or_length, stage_plus_one, e.call});
}

// `thread`: the number of the ring the event is in (kThread).
void write_event(uint32_t thread, const EventRing& ring, uint64_t index) {
  const RawEvent& e = ring.at(index);
  if (aggregate_mode()) {
    if (e.kind == EventKind::kAlloc || e.kind == EventKind::kRealloc || e.kind == EventKind::kFree) {
      aggregate_event(e);
      return;
    }
    w.aggregate.before_record(raw_sink);
  }
  switch (e.kind) {
    case EventKind::kAlloc:
    case EventKind::kRealloc: {
      const uint32_t stage_plus_one =
          w.open_stage_depth ? w.open_stage_instances[w.open_stage_depth - 1] + 1 : 0;
      // Room first: a chunk that starts here counts the infos defined before this one.
      uint8_t* out = reserve(records::max_encoded_bytes<records::Thread>() +
                             records::max_encoded_bytes<records::CallAllocInfo>() +
                             records::max_encoded_bytes<records::Alloc>());
      bool added = false;
      const uint32_t info = w.infos.id_of(e.b, e.stack_or_length, stage_plus_one, e.call, added);
      if (info == UINT32_MAX) {
        g_tracer.lost_events.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      out = note_thread(out, thread);
      if (added) out = encode_alloc_info(out, e, stage_plus_one);
      uint8_t* const tag = out;
      out = e.kind == EventKind::kAlloc ? records::encode(out, records::Alloc{info})
                                        : records::encode(out, records::Realloc{info});
      commit(out);
      w.live_blocks.put(e.a, info);
      w.last_alloc_address = e.a;
      w.last_event_was_alloc = true;
      // Sample mode: "nothing allocated in between" (kFreeLast, kTemporary) cannot be said
      // when most allocations are not recorded.
      w.last_alloc_tag = e.kind == EventKind::kAlloc && !sample_mode() ? tag : nullptr;
      w.last_alloc_end = w.raw_used;
      break;
    }
    case EventKind::kFree: {
      uint64_t info;
      if (!w.live_blocks.take(e.a, info)) break;
      const bool freed_last = w.last_event_was_alloc && e.a == w.last_alloc_address;
      w.last_event_was_alloc = false;
      if (freed_last && w.last_alloc_tag && w.raw_used == w.last_alloc_end && thread == w.thread_written) {
        *w.last_alloc_tag = static_cast<uint8_t>(Tag::kTemporary);  // kAlloc's fields, one byte less
        w.last_alloc_tag = nullptr;
        break;
      }
      uint8_t* out = reserve(records::max_encoded_bytes<records::Thread>() + records::max_encoded_bytes<records::Free>());
      out = note_thread(out, thread);
      out = !sample_mode() && freed_last ? records::encode(out, records::FreeLast{})
                                         : records::encode(out, records::Free{info});
      commit(out);
      break;
    }
    case EventKind::kMmap:
    case EventKind::kMunmap: {
      uint8_t* out = reserve(records::max_encoded_bytes<records::Mmap>());
      out = e.kind == EventKind::kMmap ? records::encode(out, records::Mmap{e.a, e.b, e.stack_or_length})
                                       : records::encode(out, records::Munmap{e.a, e.b});
      commit(out);
      break;
    }
    case EventKind::kEncoded: write_encoded_event(ring, index, e); break;
    case EventKind::kEncodedBlob:
      append_record(reinterpret_cast<const uint8_t*>(e.a), e.stack_or_length);
      tracer_unmap(reinterpret_cast<void*>(e.a), e.b);
      break;
  }
}

// How far ahead of the event being written the next ones' table slots are fetched: each
// event's live-block slot and allocation info are a cache miss in tables of megabytes,
// fetched together instead of one after another. Only once the program holds this many
// blocks: below, the slots it uses stay cached and fetching them costs a few ns an event.
constexpr uint64_t kPrefetchEvents = 8;
constexpr uint64_t kPrefetchFromLiveBlocks = 1u << 15;
// Aggregate mode's second fetch, of the site an event's slots name: nearer than the
// slots' own, so that they have come in when it reads them.
constexpr uint64_t kPrefetchSiteEvents = 4;

uint32_t open_stage_plus_one() {
  return w.open_stage_depth ? w.open_stage_instances[w.open_stage_depth - 1] + 1 : 0;
}

// Starts fetching what writing the event at `index` will look up (an event slot of the
// ring's own may be a payload of an encoded record: then a harmless wrong guess).
void prefetch_event(const EventRing& ring, uint64_t index) {
  const RawEvent& e = ring.at(index);
  switch (e.kind) {
    case EventKind::kAlloc:
    case EventKind::kRealloc:
      if (aggregate_mode()) {
        w.aggregate.prefetch_allocate_slots(e.a, e.stack_or_length, open_stage_plus_one());
        return;
      }
      w.infos.prefetch(e.b, e.stack_or_length, open_stage_plus_one());
      w.live_blocks.prefetch(e.a);
      return;
    case EventKind::kFree:
      if (aggregate_mode()) {
        w.aggregate.prefetch_free_slot(e.a);
        return;
      }
      w.live_blocks.prefetch(e.a);
      return;
    default:
      return;
  }
}

// Aggregate mode: starts fetching the site the event at `index` will update, found
// through the slots prefetch_event fetched.
void prefetch_event_site(const EventRing& ring, uint64_t index) {
  const RawEvent& e = ring.at(index);
  switch (e.kind) {
    case EventKind::kAlloc:
    case EventKind::kRealloc:
      w.aggregate.prefetch_allocate_site(e.stack_or_length, open_stage_plus_one());
      return;
    case EventKind::kFree:
      w.aggregate.prefetch_free_site(e.a);
      return;
    default:
      return;
  }
}

// The rings' written slots are handed back this often within a drain, not only at its end:
// a full ring's thread waits for them (event_ring.h), and a drain of full rings takes about
// a millisecond.
constexpr uint32_t kReleaseEveryEvents = 4096;

// Moves every event that can be ordered from the rings into the raw buffer (drain).
void move_events_to_raw(bool final) {
  const uint64_t fenced = w.merge.fence(g_tracer.numbers);
  const uint32_t n = g_tracer.thread_count.load(std::memory_order_acquire);
  const auto rings = [](uint32_t i) -> EventRing& { return g_tracer.threads[i]->ring; };
  const uint64_t now = monotonic_ns();
  // Before the tails: every event numbered below it is in them by now.
  const uint64_t horizon = w.merge.horizon(fenced, rings, n, now);
  uint64_t heads[Tracer::kMaxThreads];
  uint64_t tails[Tracer::kMaxThreads];
  for (uint32_t i = 0; i < n; ++i) {
    tails[i] = rings(i).tail_acquire();
    heads[i] = rings(i).head();
  }
  // After the tails: every stack node an event drained now refers to is published by now.
  write_new_stack_nodes();
  const bool aggregate = aggregate_mode();
  const bool prefetch = (aggregate ? w.aggregate.live_blocks() : w.live_blocks.size()) >= kPrefetchFromLiveBlocks;
  const bool prefetch_sites = prefetch && aggregate;
  uint32_t written_since_release = 0;
  const uint64_t given_up =
      w.merge.merge(rings, n, heads, tails, horizon, g_tracer.numbers.allocations_read, final, now,
                    [&](uint32_t ring, uint64_t index) {
                      if (prefetch && index + kPrefetchEvents < tails[ring]) prefetch_event(rings(ring), index + kPrefetchEvents);
                      if (prefetch_sites && index + kPrefetchSiteEvents < tails[ring]) {
                        prefetch_event_site(rings(ring), index + kPrefetchSiteEvents);
                      }
                      write_event(ring, rings(ring), index);
                      if (++written_since_release == kReleaseEveryEvents) {
                        written_since_release = 0;
                        // heads[] is where the merge stands: the slots before are written.
                        for (uint32_t i = 0; i < n; ++i) rings(i).consume_to(heads[i]);
                      }
                    });
  if (given_up) g_tracer.lost_events.fetch_add(given_up, std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) g_tracer.threads[i]->ring.consume_to(heads[i]);

  const uint64_t lost = g_tracer.lost_events.load(std::memory_order_relaxed);
  if (lost != w.lost_written) {
    uint8_t buf[records::max_encoded_bytes<records::Lost>()];
    append_record(buf, static_cast<size_t>(records::encode(buf, records::Lost{lost - w.lost_written}) - buf));
    w.lost_written = lost;
  }
}

// The raw buffer is in the pending file: what a drain moved there outlives a kill. Counted
// for the threads that wait for one (wait_for_writer_drain); drains are under the writer's lock.
void drain(bool final) {
  const uint32_t drain_number = g_tracer.writer_drains_begun.fetch_add(1, std::memory_order_seq_cst) + 1;
  move_events_to_raw(final);
  g_tracer.writer_drains_done.store(drain_number, std::memory_order_seq_cst);
  if (g_tracer.writer_drain_waiters.load(std::memory_order_seq_cst)) futex_wake(&g_tracer.writer_drains_done, INT32_MAX);
}

// `allocator`: kAsDue (every fifth tick in stats mode, or a heap high not asked about),
// kNow (the program is about to wait: its heap stands still, ask now), kNever (the
// allocator's lock may be held by the code this call interrupted).
enum class AskAllocator { kAsDue, kNow, kNever };

// Slots the threads published so far: a tick that finds it unchanged has nothing to date.
uint64_t events_published() {
  const uint32_t n = g_tracer.thread_count.load(std::memory_order_acquire);
  uint64_t slots = 0;
  for (uint32_t i = 0; i < n; ++i) slots += g_tracer.threads[i]->ring.tail();
  return slots;
}

void tick(ThreadState* self, AskAllocator allocator = AskAllocator::kAsDue) {
  if (events_published() != w.events_at_last_tick) {
    uint8_t buf[records::max_encoded_bytes<records::Time>()];
    push_encoded(self, buf, static_cast<uint32_t>(records::encode(buf, records::Time{trace_time_ns()}) - buf));
    w.events_at_last_tick = events_published();
  }
  if (allocator == AskAllocator::kNever) {
    push_samples(self, false);
    return;
  }
  // A heap high the allocator was not asked about (sample_records.h, note_live_bytes).
  const bool high_pending = g_tracer.allocator_sample_pending.exchange(false, std::memory_order_relaxed);
  push_samples(self, high_pending || allocator == AskAllocator::kNow);
}

// The timeline coarsens as the run ages (samplers.h, aged_tick_interval_ns) in every mode
// but full, whose ticks date its events; a RAM limit is still checked at every interval.
uint64_t tick_interval_ns() {
  const uint64_t base_ns = g_tracer.options.sample_interval_ms * 1'000'000ull;
  if (g_tracer.options.mode == trace::Mode::kFull || g_tracer.options.ram_limit_bytes) return base_ns;
  return aged_tick_interval_ns(base_ns, trace_time_ns(), g_tracer.options.timeline_full_rate_ticks);
}
bool timeline_coarse() { return tick_interval_ns() > g_tracer.options.sample_interval_ms * 1'000'000ull; }

// A chunk carries ~40 bytes of its own (header, chunk start, zstd's frame): written at most
// once a tick once ticks space out, so that a service's few sampled events a second do not
// each make one. What waits is in the shared buffers, which a SIGKILL leaves (pending_buffers.h).
uint64_t flush_every_ns() {
  const uint64_t tick_ns = tick_interval_ns();
  return tick_ns > kFlushEveryNs ? tick_ns : kFlushEveryNs;
}

// Aggregate mode's snapshots space out as the run ages too (the first 600 at the set
// interval, then age / 600): a day's run writes ~3,600 of them, not 86,400, and a kill loses
// at most one interval of the sites' figures (the heap's highs go out as they happen).
constexpr uint32_t kFullRateSnapshots = 600;
uint64_t snapshot_interval_ns() {
  const uint64_t base_ns = g_tracer.options.snapshot_interval_ms * 1'000'000ull;
  return aged_tick_interval_ns(base_ns, trace_time_ns(), kFullRateSnapshots);
}

void wait_for_tick_or_wake(uint64_t interval_ns) {
  futex_wait(&g_tracer.writer_wake_word, 0, interval_ns);
  g_tracer.writer_wake_word.store(0, std::memory_order_relaxed);
}

// A chunk due while the compressor still writes the last one waits for a later round: the
// records stay in the pending buffers, which a kill leaves, and a round never waits on a
// disk that stalls (the threads at a heap high wait for its drains: wait_for_writer_drain).
void write_chunk_if_due(bool write_now) {
  if (!write_now && compressor_busy()) return;
  if (aggregate_mode()) {
    // A chunk per snapshot: a killed process leaves whole snapshots.
    if (write_now || monotonic_ns() >= w.next_snapshot_ns) {
      w.aggregate.snapshot(trace_time_ns(), raw_sink);
      write_chunk();
      w.next_snapshot_ns = monotonic_ns() + snapshot_interval_ns();
    }
  } else if (w.raw_used >= kFlushAtRawBytes ||
             (w.raw_used > 0 && (write_now || monotonic_ns() - w.last_write_ns >= flush_every_ns()))) {
    write_chunk();
  }
}

// The compressor builds the stack table's next index when asked (stack_table.h): woken once
// for each growth, which it then sees through.
void wake_helper_for_growth() {
  const bool wanted = g_tracer.stacks.growth_wanted();
  if (wanted && !w.helper_woken_for_growth) futex_wake(&compressor.busy, INT32_MAX);
  w.helper_woken_for_growth = wanted;
}

// One round of the writer's work, with its lock held: the sampling tick when due, the
// rings drained, a chunk written when enough waits or enough time passed (`write_now`: at
// once), and the stop once RAM passed the limit.
void writer_round(ThreadState* self, bool write_now = false, AskAllocator allocator = AskAllocator::kAsDue) {
  const uint64_t now = monotonic_ns();
  if (self && writer_round_due(now)) {
    tick(self, allocator);
    g_tracer.writer_next_round_ns.store(now + tick_interval_ns(), std::memory_order_relaxed);
  }
  drain(false);
  wake_helper_for_growth();
  write_chunk_if_due(write_now);
  if (write_now) wait_for_chunks_written();
  if (g_tracer.options.ram_limit_stops && g_tracer.ram_limit_passed.load(std::memory_order_relaxed)) {
    // The machine being played has run out of RAM: what was recorded up to here is
    // written, then the program ends as under the OOM killer.
    if (aggregate_mode()) w.aggregate.snapshot(trace_time_ns(), raw_sink);
    write_chunk();
    wait_for_chunks_written();
    syscall(SYS_kill, getpid(), SIGKILL);
  }
}

// True when no signal is blocked on this thread: then this call is not inside a signal
// handler (which blocks its own signal while it runs), so the code it interrupted holds
// none of the allocator's locks. Conservative: a program that blocks signals for its own
// reasons is simply not asked at its waits.
bool outside_signal_handlers() {
  uint64_t blocked = 0;
  return syscall(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &blocked, sizeof(blocked)) == 0 && blocked == 0;
}

void* writer_main(void*) {
  t_thread.in_tracer = true;  // whatever this thread calls is the tracer's, never the program's
  ThreadState* self = current_thread_state();
  g_tracer.writer_thread_state.store(self, std::memory_order_relaxed);
  const uint64_t interval_ns = g_tracer.options.sample_interval_ms * 1'000'000ull;
  while (!w.stop.load(std::memory_order_acquire)) {
    wait_for_tick_or_wake(interval_ns);
    lock_writer();
    writer_round(self);
    unlock_writer();
  }
  return nullptr;
}

void read_proc_file(const char* path, char* buf, size_t capacity, size_t& length) {
  length = 0;
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return;
  for (;;) {
    const long r = syscall(SYS_read, fd, buf + length, capacity - length);
    if (r <= 0) break;
    length += static_cast<size_t>(r);
    if (length == capacity) break;
  }
  syscall(SYS_close, fd);
}

bool create_trace_file() {
  char* path = w.path;
  const long pid = static_cast<long>(getpid());
  // An exec'd program keeps its pid: it writes trace.<pid>.1.mst next to the first.
  for (int generation = 0; generation < 1000; ++generation) {
    if (generation == 0) {
      snprintf(path, sizeof(w.path), trace::kTracePathFormat, g_tracer.options.output_dir, pid);
    } else {
      snprintf(path, sizeof(w.path), trace::kExecTracePathFormat, g_tracer.options.output_dir, pid,
               generation);
    }
    const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path,
                                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd >= 0) {
      w.trace = adopt_descriptor(fd);
      return w.trace.fd >= 0;
    }
    if (errno != EEXIST) return false;
  }
  return false;
}

void write_process_info(uint64_t parent_pid) {
  constexpr size_t kProcBytes = 64 * 1024;
  auto* exe = static_cast<char*>(tracer_map(kProcBytes));
  auto* cmdline = static_cast<char*>(tracer_map(kProcBytes));
  if (!exe || !cmdline) return;
  long exe_len = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, kProcBytes - 1);
  if (exe_len < 0) exe_len = 0;
  size_t cmdline_len = 0;
  read_proc_file("/proc/self/cmdline", cmdline, kProcBytes, cmdline_len);
  uint32_t argc = 0;
  for (size_t i = 0; i < cmdline_len; ++i) argc += cmdline[i] == '\0';
  const size_t argv_bytes = (argc ? argc : 1) * sizeof(std::string_view);
  auto* argv = static_cast<std::string_view*>(tracer_map(argv_bytes));
  if (!argv) argc = 0;
  for (size_t start = 0, i = 0, n = 0; i < cmdline_len && n < argc; ++i) {
    if (cmdline[i] == '\0') {
      argv[n++] = std::string_view(cmdline + start, i - start);
      start = i + 1;
    }
  }

  timespec realtime{};
  clock_gettime(CLOCK_REALTIME, &realtime);
  records::ProcessInfo record;
  record.pid = static_cast<uint64_t>(getpid());
  record.parent_pid = parent_pid;
  record.mode = static_cast<uint64_t>(g_tracer.options.mode);
  record.start_realtime_ns = realtime.tv_sec * 1'000'000'000ull + realtime.tv_nsec;
  record.start_monotonic_ns = g_tracer.start_monotonic_ns;
  record.page_bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  record.max_depth = g_tracer.options.max_depth;
  record.sample_interval_ns = g_tracer.options.sample_interval_ms * 1'000'000ull;
  record.exe = std::string_view(exe, static_cast<size_t>(exe_len));
  record.argv.items = {argv, argc};
  record.allocator = allocator_name();
  commit(records::encode(reserve(records::max_encoded_bytes(record)), record));
  if (sample_mode()) {
    const records::Sampling sampling{g_tracer.options.sample_rate_bytes};
    commit(records::encode(reserve(records::max_encoded_bytes(sampling)), sampling));
  }
  if (argv) tracer_unmap(argv, argv_bytes);
  tracer_unmap(exe, kProcBytes);
  tracer_unmap(cmdline, kProcBytes);
}

void write_job_place() {
  char host[256];
  const JobPlaceInEnv place = read_job_place(host, sizeof(host));
  const records::JobPlace record{std::string_view(host, place.host_length), place.rank_plus_one,
                                 place.local_rank_plus_one, place.world_size_plus_one};
  commit(records::encode(reserve(records::max_encoded_bytes(record)), record));
}

void write_modules() {
  constexpr uint32_t kModuleBytes = 1u << 20;
  auto* buf = static_cast<uint8_t*>(tracer_map(kModuleBytes));
  if (!buf) return;
  append_record(buf, encode_modules(buf, kModuleBytes));
  tracer_unmap(buf, kModuleBytes);
}

// Records the stages a forked child inherits as open, so its trace starts inside them.
void write_open_stages() {
  for (uint32_t i = 0; i < g_tracer.stage_name_count; ++i) {
    const records::StageName record{std::string_view(g_tracer.stage_names[i], g_tracer.stage_name_lengths[i])};
    commit(records::encode(reserve(records::max_encoded_bytes(record)), record));
    ++w.stage_names_written;
  }
  for (uint32_t i = 0; i < g_tracer.open_stage_count; ++i) {
    if (g_tracer.open_stages[i] == Tracer::kDroppedStage) continue;  // never recorded
    uint8_t* record = reserve(records::max_encoded_bytes<records::StageBegin>());
    uint8_t* out = records::encode(record, records::StageBegin{g_tracer.open_stages[i], 0});
    commit(out);
    track_stages(record, static_cast<uint32_t>(out - record));
  }
}

// The raw buffers come from the trace's pending file where it can be made, once the trace
// exists (open_trace_and_buffers); these are the writer's own otherwise.
bool allocate_buffers() {
  if (!w.raw) w.raw = static_cast<uint8_t*>(tracer_map(kRawBytes));
  if (!w.compressed) {
    w.compressed_capacity = sizeof(trace::ChunkHeader) + ZSTD_compressBound(kRawBytes);
    w.compressed = static_cast<uint8_t*>(tracer_map(w.compressed_capacity));
  }
  if (!w.zstd) {
    w.zstd = ZSTD_createCCtx_advanced(ZSTD_customMem{zstd_alloc, zstd_free, nullptr});
    if (w.zstd) {
      // Level 1: much faster than zstd's default 3 for a little more size
      // (docs/performance.md), and the writer's time is the program's.
      ZSTD_CCtx_setParameter(w.zstd, ZSTD_c_compressionLevel, 1);
      ZSTD_CCtx_setParameter(w.zstd, ZSTD_c_checksumFlag, 1);
    }
  }
  return w.raw && w.compressed && w.zstd;
}

// The trace file with its header, and the raw buffers in its pending file: a fresh pair,
// or the private pair of before where the file cannot be mapped.
bool open_trace_and_buffers() {
  if (!create_trace_file()) return false;
  w.trace_bytes = 0;
  trace::FileHeader header{};
  memcpy(header.magic, trace::kFileMagic, sizeof(header.magic));
  header.version = trace::kFormatVersion;
  if (!write_all(reinterpret_cast<const uint8_t*>(&header), sizeof(header))) return false;
  if (uint8_t* buffers = pending_open(w.path, kRawBytes, w.trace_bytes)) {
    // In a fork's child the two may be swapped: both are in the mapping all the same.
    const bool swapped = w.raw == buffers + kRawBytes;
    if (w.raw && w.raw != buffers && !swapped) tracer_unmap(w.raw, kRawBytes);
    if (w.spare_raw && w.spare_raw != buffers && w.spare_raw != buffers + kRawBytes) tracer_unmap(w.spare_raw, kRawBytes);
    w.raw = swapped ? buffers + kRawBytes : buffers;
    w.spare_raw = swapped ? buffers : buffers + kRawBytes;
  }
  return allocate_buffers();
}

}  // namespace

bool writer_open(uint64_t parent_pid) {
  if (!open_trace_and_buffers()) return false;
  w.raw_used = 0;
  w.raw_fill = pending_next_chunk(w.raw);
  w.live_blocks.clear();
  w.infos.clear();
  w.aggregate.reset();
  w.next_snapshot_ns = monotonic_ns() + snapshot_interval_ns();
  w.last_event_was_alloc = false;
  w.last_alloc_tag = nullptr;
  w.stage_instances = w.open_stage_depth = w.stage_names_written = 0;
  w.stack_nodes_written = 0;
  w.write_failed.store(false, std::memory_order_relaxed);
  w.lost_written = g_tracer.lost_events.load(std::memory_order_relaxed);
  write_process_info(parent_pid);
  write_job_place();
  write_modules();
  write_open_stages();
  write_chunk();
  return true;
}

namespace {

// Makes one of the tracer's threads, with a small stack of its own (the default,
// RLIMIT_STACK's 8 MiB, would be address space taken from a program that runs under a
// limit, ulimit -v) and every signal blocked but those a fault raises in the faulting
// thread. The kernel hands a signal sent to the process to any thread that does not block
// it: a tracer thread that blocked nothing would take one that every thread of the
// program blocks (to read it by signalfd or sigwait) and die of its default action, or run
// the program's handler on the tracer's stack. A thread starts with its creator's mask.
// glibc keeps its own signals (thread cancellation, setuid across threads) unblocked.
// `name` (15 bytes at most) is what top -H, ps -L, gdb and py-spy call it: a thread starts
// with its creator's name too, so the creator takes it for the instant of the creation
// (named from inside, the thread showed the program's name until it first ran).
bool start_tracer_thread(pthread_t* thread, size_t stack_bytes, void* (*start)(void*), const char* name) {
  sigset_t blocked, creator_mask;
  sigfillset(&blocked);
  for (const FatalSignal& s : kFatalSignals) {
    if (s.raised_by_fault) sigdelset(&blocked, s.signo);
  }
  char creator_name[16] = {};
  const bool renamed = prctl(PR_GET_NAME, creator_name) == 0 && prctl(PR_SET_NAME, name) == 0;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, stack_bytes);
  pthread_sigmask(SIG_SETMASK, &blocked, &creator_mask);
  const int created = pthread_create(thread, &attributes, start, nullptr);
  pthread_sigmask(SIG_SETMASK, &creator_mask, nullptr);
  pthread_attr_destroy(&attributes);
  if (renamed) prctl(PR_SET_NAME, creator_name);
  return created == 0;
}

// Beside the writer thread; where it cannot be made, chunks are compressed where written.
void start_compressor() {
  if (compressor.running.load(std::memory_order_acquire)) return;
  if (!w.spare_raw) w.spare_raw = static_cast<uint8_t*>(tracer_map(kRawBytes));
  if (!w.spare_raw) return;
  compressor.stop.store(false, std::memory_order_relaxed);
  compressor.busy.store(0, std::memory_order_relaxed);
  // Chunks are handed over once it runs.
  const bool started = start_tracer_thread(&compressor.thread, kCompressorStackBytes, compressor_main, "memstage-zstd");
  compressor.running.store(started, std::memory_order_release);
  g_tracer.stacks.set_growth_helper(started);
}

// After the last chunk is written (process exit).
void stop_compressor() {
  if (!compressor.running.exchange(false)) return;
  g_tracer.stacks.set_growth_helper(false);
  compressor.stop.store(true, std::memory_order_release);
  futex_wake(&compressor.busy, INT32_MAX);
  pthread_join(compressor.thread, nullptr);
}

// A long sleep ticks first, with what the heap holds then; once the timeline coarsens, only
// RSS above its high: a service sleeping between requests wrote a tick and a chunk a sleep
// (docs/performance.md), a leaking one a new heap high at each. The heap's highs between
// ticks are written where they come, 1/64 of the heap apart (sample_records.h,
// note_live_bytes): a kill in the sleep loses at most that much of the peak, as a kill
// between two ticks of a writer thread does.
void force_tick_before_sleep(ThreadState* self) {
  if (!timeline_coarse() || !self) {
    g_tracer.writer_next_round_ns.store(0, std::memory_order_relaxed);
  } else if (!writer_round_due(monotonic_ns())) {
    push_rss_if_high(self);
  }
}

}  // namespace

uint64_t writer_tick_interval_ns() { return tick_interval_ns(); }

bool writer_start_thread(bool with_compressor) {
  // Claimed first: two threads that both find the writer missing start one.
  bool running = false;
  if (!g_tracer.writer_thread_running.compare_exchange_strong(running, true, std::memory_order_acq_rel)) return true;
  w.stop.store(false, std::memory_order_relaxed);
  if (!start_tracer_thread(&w.thread, kWriterStackBytes, writer_main, "memstage-write")) {
    g_tracer.writer_thread_running.store(false, std::memory_order_release);
    return false;
  }
  if (with_compressor) start_compressor();
  return true;
}

void writer_serve_inline(ServePoint point, bool allocator_safe) {
  if (writer_thread_running()) return;
  const uint64_t now = monotonic_ns();
  // A wait comes as often as the program likes (an event loop's poll): a round at most
  // once a sampling interval, but before a long sleep always, with what the heap holds now.
  const bool long_wait = point == ServePoint::kLongWait;
  if ((point == ServePoint::kWait || point == ServePoint::kSleeping) && !writer_round_due(now)) return;
  // Never waits: the lock is held by a round this call interrupted (a signal handler's
  // call), or by a fork in progress; the next serve point does the round.
  if (pthread_mutex_trylock(&w.mutex) != 0) return;
  w.mutex_owner.store(gettid_raw(), std::memory_order_relaxed);
  if (point == ServePoint::kCall) {
    writer_round(current_thread_state());
  } else if (point == ServePoint::kSleeping) {
    writer_round(current_thread_state(), false, allocator_safe ? AskAllocator::kAsDue : AskAllocator::kNever);
  } else {
    // A wait may be called from a signal handler that interrupted the allocator: asked
    // only from outside handlers.
    const AskAllocator allocator = !outside_signal_handlers() ? AskAllocator::kNever
                                   : long_wait               ? AskAllocator::kNow
                                                             : AskAllocator::kAsDue;
    if (long_wait) force_tick_before_sleep(current_thread_state());
    // Written before the program blocks, for the readers that follow the trace (a kill
    // loses nothing drained: pending_buffers.h); once the ticks space out, once a tick.
    const bool write_now = !timeline_coarse() || now - w.last_write_ns >= flush_every_ns();
    writer_round(current_thread_state(), write_now, allocator);
  }
  unlock_writer();
}

void writer_flush(bool final, bool from_signal) {
  if (from_signal) {
    if (!try_lock_writer_for(kSignalPatienceNs)) return;
  } else {
    lock_writer();
  }
  drain(final);
  if (aggregate_mode()) w.aggregate.snapshot(trace_time_ns(), raw_sink);
  const uint64_t patience_ns = from_signal ? kSignalPatienceNs : ~0ull;
  write_chunk(patience_ns);
  wait_for_chunks_written(patience_ns);
  unlock_writer();
}

void writer_finish() {
  if (g_tracer.writer_thread_running.exchange(false)) {
    w.stop.store(true, std::memory_order_release);
    wake_writer();
    pthread_join(w.thread, nullptr);
  }
  writer_flush(true, false);
  stop_compressor();
  pending_close();
  release_descriptor(w.trace);
}

void writer_before_fork() {
  lock_writer();
  // The child gets the compressor's state (its zstd context, the chunk) at rest.
  wait_for_chunks_written();
}
void writer_after_fork_parent() { unlock_writer(); }

void writer_after_fork_child(bool follow) {
  pthread_mutex_init(&w.mutex, nullptr);
  w.mutex_owner.store(0, std::memory_order_relaxed);
  g_tracer.writer_thread_running.store(false, std::memory_order_relaxed);
  // The parent's thread, not the child's; at rest when the parent forked (writer_before_fork).
  compressor.running.store(false, std::memory_order_relaxed);
  compressor.busy.store(0, std::memory_order_relaxed);
  compressor.tid.store(0, std::memory_order_relaxed);
  release_descriptor(w.trace);  // the parent's file
  pending_after_fork_child();   // and its pending file
  w.events_at_last_tick = ~0ull;
  // Events numbered before the fork are the parent's to write.
  w.merge.restart(g_tracer.numbers.next.load(std::memory_order_relaxed));
  g_tracer.writer_next_round_ns.store(0, std::memory_order_relaxed);
  if (!follow) return;
  // One thread lives on in the child: the writer's rounds run on it until it makes another.
  writer_open(static_cast<uint64_t>(getppid()));
}

}  // namespace memstage::preload
