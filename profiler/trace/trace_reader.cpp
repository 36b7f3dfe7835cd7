#include "profiler/trace/trace_reader.h"

#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "profiler/trace/block_vector.h"
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
  ChunkDecoder(TraceVisitor& v, uint32_t version, DamageLoss& loss)
      : v_(v),
        chunk_starts_(version >= kFirstVersionWithChunkStarts),
        peak_site_changes_(version >= kFirstVersionWithPeakSiteChanges),
        site_increments_(version >= kFirstVersionWithSiteIncrements),
        calls_and_threads_(version >= kFirstVersionWithCallsAndThreads),
        loss_(loss),
        stack_tree_(version >= 2),
        visitor_keeps_addresses_(v.keeps_stack_node_addresses()) {
    if (stack_tree_) add_node(0, 0);  // the root: the empty stack
  }

  uint64_t decode(const uint8_t* begin, const uint8_t* end, bool& ended) {
    records::FieldSource source(begin, end);
    uint64_t records = 0;
    if (chunk_starts_) {
      check_chunk_start(source);
      ++records;
    }
    try {
      while (!source.done()) {
        uint8_t tag;
        if (!source.get_tag(tag)) throw CorruptRecord(source.error);
        ++records;
        if (site_batch_size_ && tag != static_cast<uint8_t>(Tag::kAggSite)) hand_over_sites();
        if (!dispatch(tag, source, std::make_index_sequence<records::kRecordKinds>{})) {
          throw CorruptRecord("unknown record tag " + std::to_string(static_cast<int>(tag)));
        }
        if (tag == static_cast<uint8_t>(Tag::kEnd)) ended = true;
      }
    } catch (...) {
      hand_over_sites();  // the records read before the damage, as unbatched
      throw;
    }
    hand_over_sites();
    return records;
  }

  // Version 4 on: chunks say where they start, so a damaged one can be skipped.
  bool reads_on() const { return chunk_starts_; }

  // Whether a chunk that starts so follows the records read so far, nothing between.
  bool follows(const records::ChunkStart& s) const {
    return s.next_stack_node == nodes() && s.next_alloc_info == next_info_id_ &&
           s.next_stage_name == next_stage_name_id_ && s.next_stage_instance == stage_instances_ &&
           s.open_stages.items.size() == open_stages_.size() && stages_kept(s) == open_stages_.size();
  }

  // Whether the reader can read on from a chunk that starts so, after `skipped_bytes` it
  // could not read: no table shrinks, the stages open before and after nest, and no table
  // grows by more than the bytes skipped could have defined (a bound on the memory that
  // the lost ids' stand-ins take, for a damaged file that still checks out).
  bool can_resume_at(const records::ChunkStart& s, uint64_t skipped_bytes) const {
    const uint64_t most = (1 + skipped_bytes / 4096) * kMaxLostIdsPer4KiB;
    const auto grows = [most](uint64_t from, uint64_t to) { return to >= from && to - from <= most; };
    if (!chunk_starts_ || !grows(nodes(), s.next_stack_node) || s.next_stack_node >= UINT32_MAX ||
        !grows(next_info_id_, s.next_alloc_info) || s.next_alloc_info >= UINT32_MAX ||
        !grows(next_stage_name_id_, s.next_stage_name) || s.next_stage_name > kMaxStageNames ||
        !grows(stage_instances_, s.next_stage_instance)) {
      return false;
    }
    const auto& open = s.open_stages.items;
    const size_t kept = stages_kept(s);
    for (size_t i = kept; i < open.size(); ++i) {  // begun in the lost bytes, in order
      if (open[i].instance < stage_instances_ || open[i].instance >= s.next_stage_instance ||
          (i > kept && open[i].instance <= open[i - 1].instance) || open[i].name_id >= s.next_stage_name) {
        return false;
      }
    }
    return true;
  }

  // Reads on after damaged bytes from a chunk that starts with `s` (can_resume_at): what
  // the lost records defined gets stand-ins, so that the later records' ids keep their
  // meaning; the stages open on both sides stay open, the others end here.
  void resume_at(const records::ChunkStart& s) {
    for (uint64_t id = next_stage_name_id_; id < s.next_stage_name; ++id) {
      v_.on_stage_name(visitor_name(static_cast<uint32_t>(id)), kLostInDamagedChunk);
    }
    loss_.stage_names += s.next_stage_name - next_stage_name_id_;
    next_stage_name_id_ = static_cast<uint32_t>(s.next_stage_name);
    loss_.stack_nodes += s.next_stack_node - nodes();
    while (nodes() < s.next_stack_node) add_lost_node();
    if (s.next_alloc_info > next_info_id_) lost_infos_.emplace_back(next_info_id_, s.next_alloc_info);
    loss_.alloc_infos += s.next_alloc_info - next_info_id_;
    next_info_id_ = static_cast<uint32_t>(s.next_alloc_info);
    lost_infos_end_ = next_info_id_;
    resume_stages(s);
    last_alloc_info_ = kLatestAllocLost;
  }

 private:
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
    const uint64_t id = nodes();
    if (r.parent_distance == 0 || r.parent_distance > id) throw CorruptRecord("stack node without a parent");
    if (id >= UINT32_MAX) throw CorruptRecord("too many stack nodes");
    const uint64_t parent = id - r.parent_distance;
    const uint64_t parent_address = address_of(parent);
    if (parent_address == kLostFrameAddress) {  // its address is a difference from one lost
      ++loss_.stack_nodes;
      add_lost_node();
      return;
    }
    const uint32_t depth = node_depths_[parent] + 1u;
    if (depth > records::DeltaAddresses::kMaxItems) throw CorruptRecord("implausible stack depth");
    const uint64_t return_address = parent_address + static_cast<uint64_t>(r.address_delta);
    add_node(return_address, depth);
    v_.on_stack_node(static_cast<uint32_t>(id), static_cast<uint32_t>(parent), return_address);
  }
  void handle(const records::AllocInfo& r) {
    check_stack(r.stack);
    if (r.stage_plus_one > stage_instances_) throw CorruptRecord("allocation info of a stage not begun");
    v_.on_alloc_info(next_info_id_++, r.size, static_cast<uint32_t>(r.stack),
                     static_cast<int32_t>(r.stage_plus_one) - 1);
  }
  void handle(const records::CallAllocInfo& r) {
    if (!calls_and_threads_) throw CorruptRecord("an allocation call in a trace before version 6");
    handle(records::AllocInfo{r.size, r.stack, r.stage_plus_one});
    if (alloc_call_of(r.call) > AllocCall{kMaxAllocCall} || align_log2_of(r.call) >= 64 || r.call >> 16) {
      throw CorruptRecord("allocation info of an unknown call");
    }
    v_.on_alloc_call(next_info_id_ - 1, alloc_call_of(r.call), align_log2_of(r.call));
  }
  void handle(const records::Thread& r) {
    if (!calls_and_threads_) throw CorruptRecord("a thread record in a trace before version 6");
    if (r.thread >= kMaxTraceThreads) throw CorruptRecord("a thread number past the tracer's");
    v_.on_thread(static_cast<uint32_t>(r.thread));
  }
  void handle(const records::Alloc& r) { on_alloc(r.info, false); }
  void handle(const records::Realloc& r) { on_alloc(r.info, true); }
  void on_alloc(uint64_t info, bool realloc) {
    if (!known_info(info)) {
      last_alloc_info_ = kLatestAllocLost;
      return;
    }
    v_.on_alloc(static_cast<uint32_t>(info), realloc);
    last_alloc_info_ = static_cast<int64_t>(info);
  }
  void handle(const records::Free& r) {
    if (known_info(r.info)) v_.on_free(static_cast<uint32_t>(r.info), false);
    last_alloc_info_ = -1;
  }
  void handle(const records::FreeLast&) {
    if (last_alloc_info_ == kLatestAllocLost) {
      ++loss_.events_left_out;
    } else if (last_alloc_info_ < 0) {
      throw CorruptRecord("free of the latest allocation with none before it");
    } else {
      v_.on_free(static_cast<uint32_t>(last_alloc_info_), true);
    }
    last_alloc_info_ = -1;
  }
  void handle(const records::Temporary& r) {
    if (known_info(r.info)) {
      v_.on_alloc(static_cast<uint32_t>(r.info), false);
      v_.on_free(static_cast<uint32_t>(r.info), true);
    }
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
    v_.on_stage_name(visitor_name(next_stage_name_id_++), std::string(r.name));
  }
  void handle(const records::StageBegin& r) {
    if (r.name_id >= next_stage_name_id_) throw CorruptRecord("stage begins before its name");
    begin_stage(static_cast<uint32_t>(r.name_id), visitor_name(static_cast<uint32_t>(r.name_id)), r.t_ns);
  }
  void begin_stage(uint32_t name_id, uint32_t visitor_name_id, uint64_t t_ns) {
    if (open_stages_.size() == kMaxStageDepth) throw CorruptRecord("stages nested deeper than the tracer writes");
    open_stages_.push_back(OpenStage{static_cast<uint32_t>(stage_instances_), name_id});
    ++stage_instances_;
    v_.on_stage_begin(visitor_name_id, t_ns);
  }
  void handle(const records::StageEnd& r) {
    if (!open_stages_.empty()) open_stages_.pop_back();
    v_.on_stage_end(r.t_ns);
  }
  void handle(const records::StageLimitHit& r) {
    if (r.limit > static_cast<uint64_t>(StageLimit::kDepth)) throw CorruptRecord("unknown stage limit");
    v_.on_stage_limit(r.t_ns, static_cast<StageLimit>(r.limit), r.limit_value, r.begins_dropped);
  }
  void handle(const records::Rss& r) { v_.on_rss(r.t_ns, r.rss_bytes, r.tracer_bytes); }
  void handle(const records::RssHighWater& r) { v_.on_rss_high_water(r.t_ns, r.rss_bytes); }
  void handle(const records::InheritedFreesUntold& r) { v_.on_inherited_frees_untold(r.t_ns); }
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
    site_batch_[site_batch_size_++] =
        AggSiteRecord{static_cast<uint32_t>(r.stack), stage_of(r.stage_plus_one), r.allocations, r.bytes_allocated,
                      r.temporary_allocations, r.live_bytes, r.live_blocks, site_increments_};
    if (site_batch_size_ == kSiteBatch) hand_over_sites();
  }
  // The kAggSite records read and not yet handed over, before any other record is.
  void hand_over_sites() {
    if (!site_batch_size_) return;
    const size_t n = site_batch_size_;
    site_batch_size_ = 0;
    v_.on_agg_sites(std::span<const AggSiteRecord>(site_batch_, n));
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
    v_.on_agg_peak_site(AggPeakSiteRecord{static_cast<uint32_t>(r.stack), stage_of(r.stage_plus_one), r.bytes,
                                          r.blocks, peak_site_changes_});
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
  void handle(const records::ChunkStart&) { throw CorruptRecord("a chunk start inside a chunk"); }

  // Version 4: a chunk opens with the counts of what the records before it defined; read
  // in order, they are the reader's own.
  void check_chunk_start(records::FieldSource& source) {
    uint8_t tag;
    if (!source.get_tag(tag) || tag != static_cast<uint8_t>(Tag::kChunkStart)) {
      throw CorruptRecord("a chunk that does not open with its start");
    }
    records::ChunkStart& s = std::get<records::ChunkStart>(scratch_);
    if (!records::decode(source, s)) throw CorruptRecord(source.error ? source.error : "bad chunk start");
    if (!follows(s)) throw CorruptRecord("a chunk start that does not match the records before it");
  }

  // How many of the stages open now are still open where `s` starts (the outermost ones).
  size_t stages_kept(const records::ChunkStart& s) const {
    const auto& open = s.open_stages.items;
    size_t kept = 0;
    while (kept < open_stages_.size() && kept < open.size() && open[kept].instance == open_stages_[kept].instance &&
           open[kept].name_id == open_stages_[kept].name_id) {
      ++kept;
    }
    return kept;
  }
  // The stage instances begun in the lost bytes are begun again, in order, at the time
  // reached (0: no later than before): those still open with their names, the others
  // ended at once under kLostInDamagedChunk, so that later records name the same instances.
  void resume_stages(const records::ChunkStart& s) {
    const auto& open = s.open_stages.items;
    const size_t kept = stages_kept(s);
    while (open_stages_.size() > kept) {
      open_stages_.pop_back();
      v_.on_stage_end(0);
    }
    loss_.stage_instances += s.next_stage_instance - stage_instances_;
    size_t next_open = kept;
    while (stage_instances_ < s.next_stage_instance) {
      if (next_open < open.size() && open[next_open].instance == stage_instances_) {
        const auto name_id = static_cast<uint32_t>(open[next_open++].name_id);
        begin_stage(name_id, visitor_name(name_id), 0);
      } else {
        begin_stage(kNoName, lost_stage_name(), 0);
        open_stages_.pop_back();
        v_.on_stage_end(0);
      }
    }
  }
  // The visitor's id of trace stage name `id`: past the stand-in name made for the lost
  // stages (lost_stage_name), one more.
  uint32_t visitor_name(uint32_t id) const { return id >= lost_name_from_ ? id + 1 : id; }
  // The visitor's id of the name kLostInDamagedChunk, made the first time it is needed.
  uint32_t lost_stage_name() {
    if (lost_name_from_ == kNoName) {
      lost_name_from_ = next_stage_name_id_;
      v_.on_stage_name(lost_name_from_, kLostInDamagedChunk);
    }
    return lost_name_from_;
  }
  void add_lost_node() {
    const auto id = static_cast<uint32_t>(nodes());
    add_node(kLostFrameAddress, 1);
    v_.on_stack_node(id, 0, kLostFrameAddress);
  }
  // Version 2: the stack nodes so far, and each one's return address and depth.
  uint64_t nodes() const { return node_depths_.size(); }
  void add_node(uint64_t return_address, uint32_t depth) {
    if (!visitor_keeps_addresses_) node_addresses_.push_back(return_address);
    node_depths_.push_back(static_cast<uint16_t>(depth));
  }
  uint64_t address_of(uint64_t node) const {
    return visitor_keeps_addresses_ ? v_.stack_node_address(static_cast<uint32_t>(node)) : node_addresses_[node];
  }

  // An event names stack `id`: it must be defined.
  void check_stack(uint64_t id) const {
    if (id >= (stack_tree_ ? nodes() : next_stack_id_)) {
      throw CorruptRecord("event refers to an undefined stack");
    }
  }
  // False for an info defined in damaged bytes: the event naming it is left out, counted.
  bool known_info(uint64_t id) {
    if (id >= next_info_id_) throw CorruptRecord("event refers to an undefined allocation info");
    if (id >= lost_infos_end_) return true;
    for (const auto& [first, end] : lost_infos_) {
      if (id >= first && id < end) {
        ++loss_.events_left_out;
        return false;
      }
    }
    return true;
  }

  // A lost chunk defines at most this many ids per 4 KiB skipped (can_resume_at): a chunk
  // holds kMaxChunkRawBytes of records at most, and the writer's are 2 MiB.
  static constexpr uint64_t kMaxLostIdsPer4KiB = 1u << 20;
  static constexpr int64_t kLatestAllocLost = -2;  // last_alloc_info_: in damaged bytes
  static constexpr uint32_t kNoName = UINT32_MAX;
  struct OpenStage {
    uint32_t instance;
    uint32_t name_id;  // the trace's
  };

  TraceVisitor& v_;
  records::AllRecords scratch_;
  // Consecutive kAggSite records, handed over together (TraceVisitor::on_agg_sites): the
  // first pass fetches each one's table slots while it works on those before.
  static constexpr size_t kSiteBatch = 64;
  AggSiteRecord site_batch_[kSiteBatch];
  size_t site_batch_size_ = 0;
  uint32_t next_info_id_ = 0;
  int64_t last_alloc_info_ = -1;
  uint64_t stage_instances_ = 0;
  std::vector<OpenStage> open_stages_;
  // Version 4: the allocation infos defined in damaged bytes, [first, end) ranges, and the
  // end of the last (0: none, so an event's check costs one compare).
  const bool chunk_starts_;
  const bool peak_site_changes_;  // kAggPeakSite records are changes (version 4 on)
  const bool site_increments_;    // kAggSite's counts are increments (version 5 on)
  const bool calls_and_threads_;  // kCallAllocInfo and kThread may appear (version 6 on)
  std::vector<std::pair<uint32_t, uint32_t>> lost_infos_;
  uint32_t lost_infos_end_ = 0;
  uint32_t lost_name_from_ = kNoName;
  DamageLoss& loss_;
  // Version 1: whole stacks, numbered as defined.
  uint32_t next_stack_id_ = 0;
  // Version 2: the stack tree, each node's address (to decode a child's delta; the
  // visitor's where it keeps them) and depth (to bound it), in blocks by node: as doubling
  // lists they held their old copy and the new at once, at pass one's highest.
  const bool stack_tree_;
  const bool visitor_keeps_addresses_;
  BlockVector<uint64_t> node_addresses_;
  BlockVector<uint16_t> node_depths_;
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

// Reads one chunk where the file stands and checks it: its header, its payload's length,
// its zstd frame (and the content checksum the tracer adds).
class ChunkReader {
 public:
  enum class Status { kChunk, kEndOfFile, kBad };
  explicit ChunkReader(FILE* f) : f_(f), zstd_(ZSTD_createDCtx(), ZSTD_freeDCtx) {}

  Status read(const FollowWriter* follow) {
    ChunkHeader chunk{};
    const size_t got = read_fully(f_, &chunk, sizeof(chunk), follow);
    if (got == 0) return Status::kEndOfFile;
    if (got < sizeof(chunk)) return bad("the file ends inside a chunk header");
    if (chunk.magic != kChunkMagic || chunk.raw_bytes > kMaxChunkRawBytes ||
        chunk.compressed_bytes > ZSTD_compressBound(kMaxChunkRawBytes)) {
      return bad("corrupt chunk header");
    }
    compressed_.resize(chunk.compressed_bytes);
    if (read_fully(f_, compressed_.data(), compressed_.size(), follow) != compressed_.size()) {
      return bad("the file ends inside a chunk");
    }
    raw_.resize(chunk.raw_bytes);
    const size_t n = ZSTD_decompressDCtx(zstd_.get(), raw_.data(), raw_.size(), compressed_.data(), compressed_.size());
    if (ZSTD_isError(n) || n != chunk.raw_bytes) {
      return bad("corrupt chunk (" + std::string(ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size") + ")");
    }
    return Status::kChunk;
  }
  const uint8_t* records() const { return raw_.data(); }
  const uint8_t* records_end() const { return raw_.data() + raw_.size(); }
  uint64_t chunk_bytes() const { return sizeof(ChunkHeader) + compressed_.size(); }
  const std::string& why() const { return why_; }

 private:
  Status bad(std::string why) {
    why_ = std::move(why);
    return Status::kBad;
  }
  FILE* f_;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> zstd_;
  std::vector<uint8_t> compressed_;
  std::vector<uint8_t> raw_;
  std::string why_;
};

// The kChunkStart a version 4 chunk's records open with, if they do.
bool chunk_start_of(const ChunkReader& chunk, records::ChunkStart& start) {
  records::FieldSource source(chunk.records(), chunk.records_end());
  uint8_t tag;
  return source.get_tag(tag) && tag == static_cast<uint8_t>(Tag::kChunkStart) && records::decode(source, start);
}

// After damaged bytes at `from`: the next chunk that checks out and that the decoder can
// read on from, found by its magic. Leaves `chunk` holding it and the file after it.
std::optional<uint64_t> next_good_chunk(FILE* f, uint64_t from, ChunkReader& chunk, const ChunkDecoder& decoder) {
  constexpr size_t kBlockBytes = 1u << 20;
  std::vector<uint8_t> block(kBlockBytes);
  records::ChunkStart start;
  uint8_t magic[sizeof(kChunkMagic)];
  memcpy(magic, &kChunkMagic, sizeof(magic));
  for (uint64_t at = from + 1;;) {
    if (fseeko(f, static_cast<off_t>(at), SEEK_SET) != 0) return std::nullopt;
    const size_t n = fread(block.data(), 1, block.size(), f);
    if (n < sizeof(magic)) return std::nullopt;
    const auto* end = block.data() + n;
    for (const uint8_t* p = block.data(); (p = std::search(p, end, magic, magic + sizeof(magic))) != end; ++p) {
      const uint64_t candidate = at + static_cast<uint64_t>(p - block.data());
      if (fseeko(f, static_cast<off_t>(candidate), SEEK_SET) != 0) return std::nullopt;
      if (chunk.read(nullptr) == ChunkReader::Status::kChunk && chunk_start_of(chunk, start) &&
          decoder.can_resume_at(start, candidate - from)) {
        return candidate;
      }
    }
    at += n - (sizeof(magic) - 1);  // a magic across the block's end is found in the next
  }
}

// A good chunk whose start says that records before it are missing, with no damaged bytes
// between: the writer dropped a chunk (a dying process's flush that could not wait for the
// one before it). Read on from it, as after damaged bytes, with a span of none.
void resume_after_unwritten(const ChunkReader& chunk, ChunkDecoder& decoder, uint64_t offset, DamageLoss& damage) {
  records::ChunkStart start;
  if (!decoder.reads_on() || !chunk_start_of(chunk, start) || decoder.follows(start) ||
      !decoder.can_resume_at(start, 0)) {
    return;
  }
  damage.spans.push_back(DamagedSpan{offset, 0, "the writer dropped them"});
  decoder.resume_at(start);
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

  summary.version = header.version;
  ChunkReader chunk(f.get());
  ChunkDecoder decoder(visitor, header.version, summary.damage);
  uint64_t offset = sizeof(header);
  for (;;) {
    ChunkReader::Status status = chunk.read(follow);
    if (status == ChunkReader::Status::kEndOfFile) break;
    std::string why = chunk.why();
    if (status == ChunkReader::Status::kChunk) resume_after_unwritten(chunk, decoder, offset, summary.damage);
    for (;;) {  // until a chunk decodes, the bad ones before it skipped
      if (status == ChunkReader::Status::kChunk) {
        try {
          summary.records += decoder.decode(chunk.records(), chunk.records_end(), summary.ended_cleanly);
          break;
        } catch (const CorruptRecord& e) {
          why = std::string("corrupt record (") + e.what() + ")";
        }
      }
      // The first chunk holds the process record, which says how to read the rest: not skipped.
      const std::optional<uint64_t> next = decoder.reads_on() && summary.chunks > 0
                                               ? next_good_chunk(f.get(), offset, chunk, decoder)
                                               : std::nullopt;
      if (!next) {  // nothing good after it: the file is cut short there, as a killed process leaves it
        summary.truncated = true;
        summary.truncation = why + " at byte " + std::to_string(offset);
        break;
      }
      summary.damage.spans.push_back(DamagedSpan{offset, *next - offset, why});
      offset = *next;
      records::ChunkStart start;
      chunk_start_of(chunk, start);
      decoder.resume_at(start);
      status = ChunkReader::Status::kChunk;
    }
    if (summary.truncated) break;
    ++summary.chunks;
    offset += chunk.chunk_bytes();
    if (follow) summary.file_bytes = std::max(summary.file_bytes, offset);
    if (progress) progress(offset, summary.file_bytes);
    if (visitor.done()) break;
  }
  struct stat written{};
  if (follow && fstat(fileno(f.get()), &written) == 0) summary.file_bytes = static_cast<uint64_t>(written.st_size);
  return summary;
}

}  // namespace memstage::trace

namespace memstage::trace {

uint64_t DamageLoss::skipped_bytes() const {
  uint64_t bytes = 0;
  for (const DamagedSpan& span : spans) bytes += span.bytes;
  return bytes;
}

}  // namespace memstage::trace
