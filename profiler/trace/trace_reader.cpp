#include "profiler/trace/trace_reader.h"

#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "profiler/trace/trace_records.h"

namespace memstage::trace {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

class CorruptRecord : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Decodes the records of one chunk through the record table (trace_records.h) and hands
// them to the visitor, checking that every id a record uses was defined before it.
class ChunkDecoder {
 public:
  ChunkDecoder(TraceVisitor& v, uint32_t version) : v_(v), stack_tree_(version >= 2) {
    if (stack_tree_) {  // the root: the empty stack
      node_addresses_.push_back(0);
      node_depths_.push_back(0);
    }
  }

  uint64_t decode(const uint8_t* begin, const uint8_t* end, bool& ended) {
    records::FieldSource source(begin, end);
    uint64_t records = 0;
    while (!source.done()) {
      uint8_t tag;
      if (!source.get_tag(tag)) throw CorruptRecord(source.error);
      ++records;
      if (!dispatch(tag, source, std::make_index_sequence<records::kRecordKinds>{})) {
        throw CorruptRecord("unknown record tag " + std::to_string(static_cast<int>(tag)));
      }
      if (tag == static_cast<uint8_t>(Tag::kEnd)) ended = true;
    }
    return records;
  }

 private:
  // False for a tag no record kind has. Inlined into decode's loop: called, it cost a
  // call and a frame of its own on every event (docs/performance.md).
  template <size_t... I>
  __attribute__((always_inline)) bool dispatch(uint8_t tag, records::FieldSource& source, std::index_sequence<I...>) {
    return ((tag == static_cast<uint8_t>(std::tuple_element_t<I, records::AllRecords>::kTag)
                 ? (read_one<std::tuple_element_t<I, records::AllRecords>>(source), true)
                 : false) ||
            ...);
  }
  template <class R>
  void read_one(records::FieldSource& source) {
    R& r = std::get<R>(scratch_);  // reused: its lists keep their capacity
    if (!records::decode(source, r)) throw CorruptRecord(source.error ? source.error : "bad record");
    handle(r);
  }

  void handle(const records::ProcessInfo& r) {
    ProcessInfo info;
    info.pid = r.pid;
    info.parent_pid = r.parent_pid;
    info.mode = static_cast<Mode>(r.mode);
    info.start_realtime_ns = r.start_realtime_ns;
    info.start_monotonic_ns = r.start_monotonic_ns;
    info.page_bytes = r.page_bytes;
    info.max_depth = static_cast<uint32_t>(r.max_depth);
    info.sample_interval_ns = r.sample_interval_ns;
    info.exe = std::string(r.exe);
    for (std::string_view arg : r.argv.items) info.argv.emplace_back(arg);
    info.allocator = std::string(r.allocator);
    v_.on_process_info(info);
  }
  void handle(const records::Time& r) { v_.on_time(r.t_ns); }
  void handle(const records::Modules& r) {
    std::vector<Module> modules(r.modules.items.size());
    for (size_t i = 0; i < modules.size(); ++i) {
      const records::ModuleEntry& entry = r.modules.items[i];
      modules[i].path = std::string(entry.path);
      modules[i].load_bias = entry.load_bias;
      for (const records::Segment& seg : entry.segments.items) modules[i].segments.push_back({seg.start, seg.end});
    }
    v_.on_modules(modules);
  }
  void handle(const records::Stack& r) {
    if (stack_tree_) throw CorruptRecord("a whole stack in a trace of stack nodes");
    v_.on_stack(next_stack_id_++, r.return_addresses.items);
  }
  void handle(const records::StackNode& r) {
    if (!stack_tree_) throw CorruptRecord("a stack node in a trace of whole stacks");
    const uint64_t id = node_addresses_.size();
    if (r.parent_distance == 0 || r.parent_distance > id) throw CorruptRecord("stack node without a parent");
    if (id >= UINT32_MAX) throw CorruptRecord("too many stack nodes");
    const uint64_t parent = id - r.parent_distance;
    const uint32_t depth = node_depths_[parent] + 1u;
    if (depth > records::DeltaAddresses::kMaxItems) throw CorruptRecord("implausible stack depth");
    const uint64_t return_address = node_addresses_[parent] + static_cast<uint64_t>(r.address_delta);
    node_addresses_.push_back(return_address);
    node_depths_.push_back(static_cast<uint16_t>(depth));
    v_.on_stack_node(static_cast<uint32_t>(id), static_cast<uint32_t>(parent), return_address);
  }
  void handle(const records::AllocInfo& r) {
    check_stack(r.stack);
    if (r.stage_plus_one > stage_instances_) throw CorruptRecord("allocation info of a stage not begun");
    v_.on_alloc_info(next_info_id_++, r.size, static_cast<uint32_t>(r.stack),
                     static_cast<int32_t>(r.stage_plus_one) - 1);
  }
  void handle(const records::Alloc& r) { on_alloc(r.info, false); }
  void handle(const records::Realloc& r) { on_alloc(r.info, true); }
  void on_alloc(uint64_t info, bool realloc) {
    check_info(info);
    v_.on_alloc(static_cast<uint32_t>(info), realloc);
    last_alloc_info_ = static_cast<int64_t>(info);
  }
  void handle(const records::Free& r) {
    check_info(r.info);
    v_.on_free(static_cast<uint32_t>(r.info), false);
    last_alloc_info_ = -1;
  }
  void handle(const records::FreeLast&) {
    if (last_alloc_info_ < 0) throw CorruptRecord("free of the latest allocation with none before it");
    v_.on_free(static_cast<uint32_t>(last_alloc_info_), true);
    last_alloc_info_ = -1;
  }
  void handle(const records::Temporary& r) {
    check_info(r.info);
    v_.on_alloc(static_cast<uint32_t>(r.info), false);
    v_.on_free(static_cast<uint32_t>(r.info), true);
    last_alloc_info_ = -1;
  }
  void handle(const records::Mmap& r) {
    check_stack(r.stack);
    v_.on_mmap(r.address, r.length, static_cast<uint32_t>(r.stack));
  }
  void handle(const records::Munmap& r) { v_.on_munmap(r.address, r.length); }
  void handle(const records::Mremap& r) {
    check_stack(r.stack);
    v_.on_mremap(r.old_address, r.old_length, r.new_address, r.new_length, static_cast<uint32_t>(r.stack));
  }
  void handle(const records::StageName& r) {
    if (r.name.size() > kMaxStageNameBytes) throw CorruptRecord("stage name longer than the tracer writes");
    v_.on_stage_name(next_stage_name_id_++, std::string(r.name));
  }
  void handle(const records::StageBegin& r) {
    if (r.name_id >= next_stage_name_id_) throw CorruptRecord("stage begins before its name");
    if (open_stages_ == kMaxStageDepth) throw CorruptRecord("stages nested deeper than the tracer writes");
    ++open_stages_;
    ++stage_instances_;
    v_.on_stage_begin(static_cast<uint32_t>(r.name_id), r.t_ns);
  }
  void handle(const records::StageEnd& r) {
    if (open_stages_ > 0) --open_stages_;
    v_.on_stage_end(r.t_ns);
  }
  void handle(const records::StageLimitHit& r) {
    if (r.limit > static_cast<uint64_t>(StageLimit::kDepth)) throw CorruptRecord("unknown stage limit");
    v_.on_stage_limit(r.t_ns, static_cast<StageLimit>(r.limit), r.limit_value, r.begins_dropped);
  }
  void handle(const records::Rss& r) { v_.on_rss(r.t_ns, r.rss_bytes, r.tracer_bytes); }
  void handle(const records::RssHighWater& r) { v_.on_rss_high_water(r.t_ns, r.rss_bytes); }
  void handle(const records::AllocatorStats& r) {
    v_.on_allocator_stats(AllocatorStatsRecord{r.t_ns, r.in_use_bytes, r.resident_bytes, r.mapped_bytes});
  }
  void handle(const records::Counters& r) {
    v_.on_counters(CountersRecord{r.t_ns, r.allocations, r.frees, r.bytes_allocated});
  }
  void handle(const records::End& r) { v_.on_end(r.t_ns); }
  void handle(const records::Signal& r) { v_.on_signal(r.t_ns, static_cast<int>(r.signal)); }
  void handle(const records::Lost& r) { v_.on_lost(r.count); }
  void handle(const records::RamLimit& r) { v_.on_ram_limit(r.t_ns, r.rss_bytes, r.limit_bytes); }
  void handle(const records::PythonCode& r) {
    v_.on_python_code(PythonCode{r.code_id, r.first_line, std::string(r.file), std::string(r.function)});
  }
  void handle(const records::PythonInfo& r) {
    v_.on_python_info(PythonInfo{std::string(r.version), std::string(r.allocator)});
  }
  void handle(const records::DeepBindRemoved& r) { v_.on_deep_bind_removed(std::string(r.path)); }

  void handle(const records::DeviceAlloc& r) {
    check_stack(r.stack);
    if (r.kind > static_cast<uint64_t>(DeviceMemory::kPhysical)) throw CorruptRecord("unknown device memory kind");
    v_.on_device_alloc(DeviceAllocRecord{r.t_ns, r.address, r.bytes, static_cast<DeviceMemory>(r.kind),
                                         static_cast<uint32_t>(r.stack)});
  }
  void handle(const records::DeviceFree& r) {
    if (r.kind > static_cast<uint64_t>(DeviceMemory::kPhysical)) throw CorruptRecord("unknown device memory kind");
    v_.on_device_free(r.t_ns, r.address, static_cast<DeviceMemory>(r.kind));
  }
  void handle(const records::DeviceCache& r) { v_.on_device_cache(r.t_ns, r.reserved_bytes, r.allocated_bytes); }
  void handle(const records::MemoryShares& r) {
    v_.on_memory_shares(MemorySharesRecord{r.t_ns, r.pss_bytes, r.pss_anon_bytes, r.pss_file_bytes, r.pss_shmem_bytes,
                                           r.shared_bytes, r.private_bytes});
  }
  void handle(const records::JobPlace& r) {
    const auto minus_one = [](uint64_t v) { return v ? std::optional<uint64_t>(v - 1) : std::nullopt; };
    v_.on_job_place(JobPlace{std::string(r.host), minus_one(r.rank_plus_one), minus_one(r.local_rank_plus_one),
                             minus_one(r.world_size_plus_one)});
  }

  void handle(const records::MmapReserved& r) {
    check_stack(r.stack);
    v_.on_mmap_reserved(r.address, r.length, static_cast<uint32_t>(r.stack));
  }
  void handle(const records::Mprotect& r) { v_.on_mprotect(r.address, r.length, r.accessible != 0); }
  void handle(const records::Exec& r) { v_.on_exec(r.t_ns, std::string(r.path)); }
  void handle(const records::Sampling& r) { v_.on_sampling(r.rate_bytes); }
  void handle(const records::HeapCounters& r) { v_.on_heap_counters(r.t_ns, r.live_bytes, r.high_bytes); }
  void handle(const records::AggHeap& r) { v_.on_agg_heap(r.live_bytes, r.high_bytes); }
  void handle(const records::AggSnapshot& r) {
    v_.on_agg_snapshot(AggSnapshotRecord{r.t_ns, r.allocations, r.frees, r.bytes_allocated, r.temporary_allocations});
  }
  void handle(const records::AggSite& r) {
    check_stack(r.stack);
    v_.on_agg_site(AggSiteRecord{static_cast<uint32_t>(r.stack), stage_of(r.stage_plus_one), r.allocations,
                                 r.bytes_allocated, r.temporary_allocations, r.live_bytes, r.live_blocks});
  }
  void handle(const records::AggStage& r) {
    if (r.stage >= stage_instances_) throw CorruptRecord("figures of a stage not begun");
    agg_stage_.stage = static_cast<uint32_t>(r.stage);
    agg_stage_.closed = r.closed != 0;
    agg_stage_.frees = r.frees;
    agg_stage_.retained_bytes = r.retained_bytes;
    stack_bytes(r.top_stacks.items, agg_stage_.top_stacks);
    v_.on_agg_stage(agg_stage_);
  }
  void handle(const records::AggPeakSite& r) {
    check_stack(r.stack);
    v_.on_agg_peak_site(AggPeakSiteRecord{static_cast<uint32_t>(r.stack), stage_of(r.stage_plus_one), r.bytes, r.blocks});
  }
  void handle(const records::AggRamLimitStacks& r) {
    stack_bytes(r.stacks.items, ram_limit_stacks_);
    v_.on_agg_ram_limit_stacks(ram_limit_stacks_);
  }
  int32_t stage_of(uint64_t stage_plus_one) const {
    if (stage_plus_one > stage_instances_) throw CorruptRecord("figures of a stage not begun");
    return static_cast<int32_t>(stage_plus_one) - 1;
  }
  void stack_bytes(std::span<const records::AggStackBytes> in, std::vector<AggStackBytes>& out) {
    out.clear();
    for (const auto& s : in) {
      check_stack(s.stack);
      out.push_back(AggStackBytes{static_cast<uint32_t>(s.stack), s.bytes, s.blocks});
    }
  }
  void handle(const records::Attached& r) { v_.on_attached(r.t_ns); }

  // An event names stack `id`: it must be defined.
  void check_stack(uint64_t id) const {
    if (id >= (stack_tree_ ? node_addresses_.size() : next_stack_id_)) {
      throw CorruptRecord("event refers to an undefined stack");
    }
  }
  void check_info(uint64_t id) const {
    if (id >= next_info_id_) throw CorruptRecord("event refers to an undefined allocation info");
  }

  TraceVisitor& v_;
  records::AllRecords scratch_;
  uint32_t next_info_id_ = 0;
  int64_t last_alloc_info_ = -1;
  uint64_t stage_instances_ = 0;
  uint32_t open_stages_ = 0;
  // Version 1: whole stacks, numbered as defined.
  uint32_t next_stack_id_ = 0;
  // Version 2: the stack tree, each node's address (to decode a child's delta) and depth
  // (to bound it), 10 bytes a node: a torch import's trace has ~4e6 nodes.
  const bool stack_tree_;
  std::vector<uint64_t> node_addresses_;
  std::vector<uint16_t> node_depths_;
  static_assert(records::DeltaAddresses::kMaxItems <= UINT16_MAX);
  uint32_t next_stage_name_id_ = 0;
  AggStageRecord agg_stage_;
  std::vector<AggStackBytes> ram_limit_stacks_;
};

// Reads `n` bytes from where `f` stands. With a writer still at work, waits for bytes
// the file does not have yet; `writing()` is asked before each try, so that the try after
// it said no sees everything the writer wrote.
size_t read_fully(FILE* f, void* into, size_t n, const FollowWriter* follow) {
  size_t got = fread(into, 1, n, f);
  while (got < n && follow) {
    const bool writing = follow->writing();
    clearerr(f);  // past the end for now, not for good
    got += fread(static_cast<char*>(into) + got, 1, n - got, f);
    if (got == n || !writing) break;
    follow->wait();
  }
  return got;
}

}  // namespace

bool looks_like_trace(const std::string& path) {
  File f(fopen(path.c_str(), "rb"));
  if (!f) return false;
  FileHeader header{};
  return fread(&header, sizeof(header), 1, f.get()) == 1 &&
         memcmp(header.magic, kFileMagic, sizeof(header.magic)) == 0;
}

ReadSummary read_trace(const std::string& path, TraceVisitor& visitor,
                       const std::function<void(uint64_t, uint64_t)>& progress, const FollowWriter* follow) {
  File f(fopen(path.c_str(), "rb"));
  if (!f) throw std::runtime_error("cannot open " + path + ": " + strerror(errno));
  ReadSummary summary;
  fseeko(f.get(), 0, SEEK_END);
  summary.file_bytes = static_cast<uint64_t>(ftello(f.get()));
  fseeko(f.get(), 0, SEEK_SET);

  FileHeader header{};
  const size_t header_bytes = read_fully(f.get(), &header, sizeof(header), follow);
  // Empty: the tracer made the file and could write nothing to it (a disk full from the start).
  if (header_bytes == 0) throw NotATraceError(path + " is empty: nothing was written to it (was the disk full?)");
  if (header_bytes != sizeof(header) || memcmp(header.magic, kFileMagic, sizeof(header.magic)) != 0) {
    throw NotATraceError(path + " is not a memstage trace");
  }
  if (header.version < kOldestReadableVersion || header.version > kFormatVersion) {
    throw NotATraceError(path + " is a memstage trace of version " + std::to_string(header.version) +
                         ", this build reads versions " + std::to_string(kOldestReadableVersion) + " to " +
                         std::to_string(kFormatVersion));
  }

  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> zstd(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<uint8_t> compressed;
  std::vector<uint8_t> raw;
  ChunkDecoder decoder(visitor, header.version);
  uint64_t offset = sizeof(header);
  for (;;) {
    ChunkHeader chunk{};
    const size_t got = read_fully(f.get(), &chunk, sizeof(chunk), follow);
    if (got == 0) break;
    auto stop = [&](const std::string& why) {
      summary.truncated = true;
      summary.truncation = why + " at byte " + std::to_string(offset);
    };
    if (got < sizeof(chunk)) {
      stop("the file ends inside a chunk header");
      break;
    }
    if (chunk.magic != kChunkMagic || chunk.raw_bytes > kMaxChunkRawBytes ||
        chunk.compressed_bytes > ZSTD_compressBound(kMaxChunkRawBytes)) {
      stop("corrupt chunk header");
      break;
    }
    compressed.resize(chunk.compressed_bytes);
    if (read_fully(f.get(), compressed.data(), compressed.size(), follow) != compressed.size()) {
      stop("the file ends inside a chunk");
      break;
    }
    raw.resize(chunk.raw_bytes);
    const size_t n = ZSTD_decompressDCtx(zstd.get(), raw.data(), raw.size(), compressed.data(),
                                         compressed.size());
    if (ZSTD_isError(n) || n != chunk.raw_bytes) {
      stop("corrupt chunk (" + std::string(ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size") + ")");
      break;
    }
    try {
      summary.records += decoder.decode(raw.data(), raw.data() + n, summary.ended_cleanly);
    } catch (const CorruptRecord& e) {
      stop(std::string("corrupt record (") + e.what() + ")");
      break;
    }
    ++summary.chunks;
    offset += sizeof(chunk) + chunk.compressed_bytes;
    if (follow) summary.file_bytes = std::max(summary.file_bytes, offset);
    if (progress) progress(offset, summary.file_bytes);
    if (visitor.done()) break;
  }
  struct stat written{};
  if (follow && fstat(fileno(f.get()), &written) == 0) summary.file_bytes = static_cast<uint64_t>(written.st_size);
  return summary;
}

}  // namespace memstage::trace
