// The trace format's record kinds in one table: for each kind its tag and its fields, in
// the order they are written, each field's type saying how it is encoded. The tracer's
// encoders (profiler/preload), the reader (trace_reader.cpp) and the tests' trace builder
// all go through `encode` and `decode` below, so a record has one definition.
//
// Field types: uint64_t is a varint ("u"), int64_t a zigzag varint ("s"), std::string_view
// a length and the bytes ("str"), List<Item> a count then the items, DeltaAddresses a
// count then addresses (the first absolute, the rest differences from the one before).
// Encoding never allocates (the tracer encodes inside malloc); decoding fills the lists'
// `decoded` vectors and points strings into the chunk being read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "profiler/trace/trace_format.h"
#include "profiler/trace/varint.h"

namespace memstage::trace::records {

// A field holding a list: `items` is what is encoded (and, after decoding, a view of
// `decoded`). A decoder refuses more than kMaxItems.
template <class Item, uint64_t kMax>
struct List {
  static constexpr uint64_t kMaxItems = kMax;
  std::span<const Item> items;
  std::vector<Item> decoded;
};

// Stack return addresses, innermost first.
struct DeltaAddresses {
  static constexpr uint64_t kMaxItems = 4096;
  std::span<const uint64_t> items;
  std::vector<uint64_t> decoded;
};

#define MEMSTAGE_RECORD_FIELDS(...)                             \
  auto fields() { return std::tie(__VA_ARGS__); }               \
  auto fields() const { return std::tie(__VA_ARGS__); }

// ---- items inside records (no tag of their own) ----

struct Segment {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  MEMSTAGE_RECORD_FIELDS(start, end)
};

struct ModuleEntry {
  std::string_view path;
  uint64_t load_bias = 0;
  List<Segment, 1024> segments;  // executable PT_LOAD segments, absolute addresses
  MEMSTAGE_RECORD_FIELDS(path, load_bias, segments)
};

// ---- the records; trace_format.h's Tag says what each one means ----

struct ProcessInfo {
  static constexpr Tag kTag = Tag::kProcessInfo;
  uint64_t pid = 0, parent_pid = 0, mode = 0, start_realtime_ns = 0, start_monotonic_ns = 0,
           page_bytes = 0, max_depth = 0, sample_interval_ns = 0;
  std::string_view exe;
  List<std::string_view, 1'000'000> argv;
  std::string_view allocator;
  MEMSTAGE_RECORD_FIELDS(pid, parent_pid, mode, start_realtime_ns, start_monotonic_ns, page_bytes,
                         max_depth, sample_interval_ns, exe, argv, allocator)
};
struct Time {
  static constexpr Tag kTag = Tag::kTime;
  uint64_t t_ns = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns)
};
struct Modules {
  static constexpr Tag kTag = Tag::kModules;
  List<ModuleEntry, 1'000'000> modules;
  MEMSTAGE_RECORD_FIELDS(modules)
};
struct Stack {
  static constexpr Tag kTag = Tag::kStack;
  DeltaAddresses return_addresses;
  MEMSTAGE_RECORD_FIELDS(return_addresses)
};
struct Alloc {
  static constexpr Tag kTag = Tag::kAlloc;
  uint64_t info = 0;
  MEMSTAGE_RECORD_FIELDS(info)
};
struct Free {
  static constexpr Tag kTag = Tag::kFree;
  uint64_t info = 0;
  MEMSTAGE_RECORD_FIELDS(info)
};
struct Realloc {
  static constexpr Tag kTag = Tag::kRealloc;
  uint64_t info = 0;
  MEMSTAGE_RECORD_FIELDS(info)
};
struct Mmap {
  static constexpr Tag kTag = Tag::kMmap;
  uint64_t address = 0, length = 0, stack = 0;
  MEMSTAGE_RECORD_FIELDS(address, length, stack)
};
struct Munmap {
  static constexpr Tag kTag = Tag::kMunmap;
  uint64_t address = 0, length = 0;
  MEMSTAGE_RECORD_FIELDS(address, length)
};
struct Mremap {
  static constexpr Tag kTag = Tag::kMremap;
  uint64_t old_address = 0, old_length = 0, new_address = 0, new_length = 0, stack = 0;
  MEMSTAGE_RECORD_FIELDS(old_address, old_length, new_address, new_length, stack)
};
struct StageName {
  static constexpr Tag kTag = Tag::kStageName;
  std::string_view name;
  MEMSTAGE_RECORD_FIELDS(name)
};
struct StageBegin {
  static constexpr Tag kTag = Tag::kStageBegin;
  uint64_t name_id = 0, t_ns = 0;
  MEMSTAGE_RECORD_FIELDS(name_id, t_ns)
};
struct StageEnd {
  static constexpr Tag kTag = Tag::kStageEnd;
  uint64_t t_ns = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns)
};
struct Rss {
  static constexpr Tag kTag = Tag::kRss;
  uint64_t t_ns = 0, rss_bytes = 0, tracer_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, rss_bytes, tracer_bytes)
};
struct RssHighWater {
  static constexpr Tag kTag = Tag::kRssHighWater;
  uint64_t t_ns = 0, rss_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, rss_bytes)
};
struct InheritedFreesUntold {
  static constexpr Tag kTag = Tag::kInheritedFreesUntold;
  uint64_t t_ns = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns)
};
struct AllocatorStats {
  static constexpr Tag kTag = Tag::kAllocatorStats;
  uint64_t t_ns = 0, in_use_bytes = 0, resident_bytes = 0, mapped_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, in_use_bytes, resident_bytes, mapped_bytes)
};
struct Counters {
  static constexpr Tag kTag = Tag::kCounters;
  uint64_t t_ns = 0, allocations = 0, frees = 0, bytes_allocated = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, allocations, frees, bytes_allocated)
};
struct End {
  static constexpr Tag kTag = Tag::kEnd;
  uint64_t t_ns = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns)
};
struct Signal {
  static constexpr Tag kTag = Tag::kSignal;
  uint64_t t_ns = 0, signal = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, signal)
};
struct Lost {
  static constexpr Tag kTag = Tag::kLost;
  uint64_t count = 0;
  MEMSTAGE_RECORD_FIELDS(count)
};
struct AllocInfo {
  static constexpr Tag kTag = Tag::kAllocInfo;
  uint64_t size = 0, stack = 0, stage_plus_one = 0;
  MEMSTAGE_RECORD_FIELDS(size, stack, stage_plus_one)
};
struct CallAllocInfo {
  static constexpr Tag kTag = Tag::kCallAllocInfo;
  uint64_t size = 0, stack = 0, stage_plus_one = 0, call = 0;  // call: encode_alloc_call
  MEMSTAGE_RECORD_FIELDS(size, stack, stage_plus_one, call)
};
struct Thread {
  static constexpr Tag kTag = Tag::kThread;
  uint64_t thread = 0;
  MEMSTAGE_RECORD_FIELDS(thread)
};
struct FreeLast {
  static constexpr Tag kTag = Tag::kFreeLast;
  std::tuple<> fields() const { return {}; }
};
struct RamLimit {
  static constexpr Tag kTag = Tag::kRamLimit;
  uint64_t t_ns = 0, rss_bytes = 0, limit_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, rss_bytes, limit_bytes)
};
struct PythonCode {
  static constexpr Tag kTag = Tag::kPythonCode;
  uint64_t code_id = 0, first_line = 0;
  std::string_view file, function;
  MEMSTAGE_RECORD_FIELDS(code_id, first_line, file, function)
};
struct PythonInfo {
  static constexpr Tag kTag = Tag::kPythonInfo;
  std::string_view version, allocator;
  MEMSTAGE_RECORD_FIELDS(version, allocator)
};
struct DeepBindRemoved {
  static constexpr Tag kTag = Tag::kDeepBindRemoved;
  std::string_view path;
  MEMSTAGE_RECORD_FIELDS(path)
};

struct StageLimitHit {
  static constexpr Tag kTag = Tag::kStageLimit;
  uint64_t t_ns = 0, limit = 0, limit_value = 0, begins_dropped = 0;  // limit: a StageLimit
  MEMSTAGE_RECORD_FIELDS(t_ns, limit, limit_value, begins_dropped)
};
struct DeviceAlloc {
  static constexpr Tag kTag = Tag::kDeviceAlloc;
  uint64_t t_ns = 0, address = 0, bytes = 0, kind = 0, stack = 0;  // kind: DeviceMemory
  MEMSTAGE_RECORD_FIELDS(t_ns, address, bytes, kind, stack)
};
struct DeviceFree {
  static constexpr Tag kTag = Tag::kDeviceFree;
  uint64_t t_ns = 0, address = 0, kind = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, address, kind)
};
struct DeviceCache {
  static constexpr Tag kTag = Tag::kDeviceCache;
  uint64_t t_ns = 0, reserved_bytes = 0, allocated_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, reserved_bytes, allocated_bytes)
};

struct StackNode {
  static constexpr Tag kTag = Tag::kStackNode;
  uint64_t parent_distance = 0;  // this node's id - its parent's
  int64_t address_delta = 0;     // this node's return address - its parent's
  MEMSTAGE_RECORD_FIELDS(parent_distance, address_delta)
};

struct Exec {
  static constexpr Tag kTag = Tag::kExec;
  uint64_t t_ns = 0;
  std::string_view path;  // as the program gave it (execvp: a name looked up in PATH)
  MEMSTAGE_RECORD_FIELDS(t_ns, path)
};

struct MmapReserved {
  static constexpr Tag kTag = Tag::kMmapReserved;
  uint64_t address = 0, length = 0, stack = 0;
  MEMSTAGE_RECORD_FIELDS(address, length, stack)
};
struct Mprotect {
  static constexpr Tag kTag = Tag::kMprotect;
  uint64_t address = 0, length = 0, accessible = 0;  // accessible: 1 or 0
  MEMSTAGE_RECORD_FIELDS(address, length, accessible)
};

struct Sampling {
  static constexpr Tag kTag = Tag::kSampling;
  uint64_t rate_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(rate_bytes)
};
struct HeapCounters {
  static constexpr Tag kTag = Tag::kHeapCounters;
  uint64_t t_ns = 0, live_bytes = 0, high_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, live_bytes, high_bytes)
};
struct MemoryShares {
  static constexpr Tag kTag = Tag::kMemoryShares;
  uint64_t t_ns = 0, pss_bytes = 0, pss_anon_bytes = 0, pss_file_bytes = 0, pss_shmem_bytes = 0, shared_bytes = 0,
           private_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, pss_bytes, pss_anon_bytes, pss_file_bytes, pss_shmem_bytes, shared_bytes,
                         private_bytes)
};
struct JobPlace {
  static constexpr Tag kTag = Tag::kJobPlace;
  std::string_view host;
  uint64_t rank_plus_one = 0, local_rank_plus_one = 0, world_size_plus_one = 0;
  MEMSTAGE_RECORD_FIELDS(host, rank_plus_one, local_rank_plus_one, world_size_plus_one)
};

// ---- aggregate mode (trace_format.h, kAggHeap and after) ----

struct AggStackBytes {
  uint64_t stack = 0, bytes = 0, blocks = 0;
  MEMSTAGE_RECORD_FIELDS(stack, bytes, blocks)
};
inline constexpr uint64_t kMaxAggStacks = 4096;

struct AggHeap {
  static constexpr Tag kTag = Tag::kAggHeap;
  uint64_t live_bytes = 0, high_bytes = 0;
  MEMSTAGE_RECORD_FIELDS(live_bytes, high_bytes)
};
struct AggSnapshot {
  static constexpr Tag kTag = Tag::kAggSnapshot;
  uint64_t t_ns = 0, allocations = 0, frees = 0, bytes_allocated = 0, temporary_allocations = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns, allocations, frees, bytes_allocated, temporary_allocations)
};
struct AggSite {
  static constexpr Tag kTag = Tag::kAggSite;
  uint64_t stack = 0, stage_plus_one = 0, allocations = 0, bytes_allocated = 0, temporary_allocations = 0,
           live_bytes = 0, live_blocks = 0;
  MEMSTAGE_RECORD_FIELDS(stack, stage_plus_one, allocations, bytes_allocated, temporary_allocations, live_bytes,
                         live_blocks)
};
struct AggStage {
  static constexpr Tag kTag = Tag::kAggStage;
  uint64_t stage = 0, closed = 0, frees = 0, retained_bytes = 0;
  List<AggStackBytes, kMaxAggStacks> top_stacks;
  MEMSTAGE_RECORD_FIELDS(stage, closed, frees, retained_bytes, top_stacks)
};
struct AggPeakSite {
  static constexpr Tag kTag = Tag::kAggPeakSite;
  uint64_t stack = 0, stage_plus_one = 0, bytes = 0, blocks = 0;
  MEMSTAGE_RECORD_FIELDS(stack, stage_plus_one, bytes, blocks)
};
struct AggRamLimitStacks {
  static constexpr Tag kTag = Tag::kAggRamLimitStacks;
  List<AggStackBytes, kMaxAggStacks> stacks;
  MEMSTAGE_RECORD_FIELDS(stacks)
};

struct Attached {
  static constexpr Tag kTag = Tag::kAttached;
  uint64_t t_ns = 0;
  MEMSTAGE_RECORD_FIELDS(t_ns)
};
struct Temporary {
  static constexpr Tag kTag = Tag::kTemporary;
  uint64_t info = 0;
  MEMSTAGE_RECORD_FIELDS(info)
};

// A stage open where a chunk starts (ChunkStart).
struct OpenStage {
  uint64_t instance = 0, name_id = 0;
  MEMSTAGE_RECORD_FIELDS(instance, name_id)
};
struct ChunkStart {
  static constexpr Tag kTag = Tag::kChunkStart;
  uint64_t next_stack_node = 1, next_alloc_info = 0, next_stage_name = 0, next_stage_instance = 0;
  List<OpenStage, kMaxStageDepth> open_stages;  // outermost first
  MEMSTAGE_RECORD_FIELDS(next_stack_node, next_alloc_info, next_stage_name, next_stage_instance, open_stages)
};
// The most bytes a ChunkStart takes encoded: room a writer keeps in every chunk for it.
inline constexpr size_t kMaxChunkStartBytes = 1 + kMaxVarintBytes * (5 + 2 * kMaxStageDepth);

#undef MEMSTAGE_RECORD_FIELDS

// Every record kind, in tag order. A reader dispatches on this list. Tags are numbered in
// blocks, one per feature (trace_format.h): the list may skip unused numbers.
using AllRecords = std::tuple<ProcessInfo, Time, Modules, Stack, Alloc, Free, Realloc, Mmap, Munmap,
                              Mremap, StageName, StageBegin, StageEnd, Rss, AllocatorStats, Counters,
                              End, Signal, Lost, AllocInfo, FreeLast, RamLimit, PythonCode, PythonInfo,
                              DeepBindRemoved, StageLimitHit, DeviceAlloc, DeviceFree, DeviceCache,
                              StackNode, Exec, MmapReserved, Mprotect, MemoryShares, JobPlace, Sampling, HeapCounters,
                              RssHighWater, InheritedFreesUntold,
                              AggHeap, AggSnapshot, AggSite, AggStage, AggPeakSite, AggRamLimitStacks, Attached,
                              Temporary, ChunkStart, CallAllocInfo, Thread>;

namespace detail {
// Tags are numbered in blocks reserved for kinds in the making, so they may leave gaps.
template <class Tuple, size_t... I>
constexpr bool tags_ascend(std::index_sequence<I...>) {
  size_t previous = 0;
  return ((static_cast<size_t>(std::tuple_element_t<I, Tuple>::kTag) > previous &&
           (previous = static_cast<size_t>(std::tuple_element_t<I, Tuple>::kTag), true)) &&
          ...);
}
}  // namespace detail
static_assert(detail::tags_ascend<AllRecords>(std::make_index_sequence<std::tuple_size_v<AllRecords>>{}),
              "AllRecords lists each Tag once, in ascending tag order");
inline constexpr size_t kRecordKinds = std::tuple_size_v<AllRecords>;
// The highest tag in use: a reader treats a tag above it, or one in a gap, as corrupt.
inline constexpr size_t kMaxTag = static_cast<size_t>(std::tuple_element_t<kRecordKinds - 1, AllRecords>::kTag);

// ---- encoding ----

namespace detail {
template <class T>
concept HasFields = requires(const T& t) { t.fields(); };
template <class T>
struct IsList : std::false_type {};
template <class Item, uint64_t N>
struct IsList<List<Item, N>> : std::true_type {};

template <class T>
uint8_t* put_field(uint8_t* out, const T& v);

template <class T>
uint8_t* put_fields(uint8_t* out, const T& item) {
  std::apply([&](const auto&... f) { ((out = put_field(out, f)), ...); }, item.fields());
  return out;
}

template <class T>
uint8_t* put_field(uint8_t* out, const T& v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return put_varint(out, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return put_svarint(out, v);
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return put_bytes(out, v.data(), v.size());
  } else if constexpr (std::is_same_v<T, DeltaAddresses>) {
    out = put_varint(out, v.items.size());
    for (size_t i = 0; i < v.items.size(); ++i) {
      out = i == 0 ? put_varint(out, v.items[0])
                   : put_svarint(out, static_cast<int64_t>(v.items[i] - v.items[i - 1]));
    }
    return out;
  } else if constexpr (IsList<T>::value) {
    out = put_varint(out, v.items.size());
    for (const auto& item : v.items) out = put_field(out, item);
    return out;
  } else {
    static_assert(HasFields<T>, "a field is u, s, str, a list or an item with fields");
    return put_fields(out, v);
  }
}

template <class T>
size_t field_max_bytes(const T& v) {
  if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>) {
    return kMaxVarintBytes;
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return kMaxVarintBytes + v.size();
  } else if constexpr (std::is_same_v<T, DeltaAddresses>) {
    return kMaxVarintBytes * (1 + v.items.size());
  } else if constexpr (IsList<T>::value) {
    size_t n = kMaxVarintBytes;
    for (const auto& item : v.items) n += field_max_bytes(item);
    return n;
  } else {
    size_t n = 0;
    std::apply([&](const auto&... f) { ((n += field_max_bytes(f)), ...); }, v.fields());
    return n;
  }
}

template <class T>
constexpr bool all_integers() {
  using Fields = decltype(std::declval<const T&>().fields());
  return []<size_t... I>(std::index_sequence<I...>) {
    return (std::is_same_v<std::remove_cvref_t<std::tuple_element_t<I, Fields>>, uint64_t> && ...);
  }(std::make_index_sequence<std::tuple_size_v<Fields>>{});
}
}  // namespace detail

// The most bytes `record` can take encoded, tag included.
template <class R>
size_t max_encoded_bytes(const R& record) {
  return 1 + detail::field_max_bytes(record);
}
// The same, known at compile time, for records made of integers only.
template <class R>
  requires(detail::all_integers<R>())
constexpr size_t max_encoded_bytes() {
  return 1 + kMaxVarintBytes * std::tuple_size_v<decltype(std::declval<const R&>().fields())>;
}

// Writes the record's tag and fields at `out` (room for max_encoded_bytes(record)) and
// returns the position after it.
template <class R>
uint8_t* encode(uint8_t* out, const R& record) {
  *out++ = static_cast<uint8_t>(R::kTag);
  return detail::put_fields(out, record);
}
// An item of a list on its own, for an encoder that writes a list's items one by one (the
// module list, built while the loader walks its modules) after encode_list_header.
template <class Item>
size_t max_item_bytes(const Item& item) {
  return detail::field_max_bytes(item);
}
template <class Item>
uint8_t* encode_item(uint8_t* out, const Item& item) {
  return detail::put_field(out, item);
}
// The tag and a list's count, for a record of one list whose items are written that way.
template <class R>
uint8_t* encode_list_header(uint8_t* out, uint64_t count) {
  static_assert(std::tuple_size_v<decltype(std::declval<const R&>().fields())> == 1, "a record of one list");
  *out++ = static_cast<uint8_t>(R::kTag);
  return put_varint(out, count);
}

// ---- decoding ----

// Reads fields from [pos, end). Every get returns false on input that is cut short,
// overlong or over a list's limit; `error` then says what.
class FieldSource {
 public:
  FieldSource(const uint8_t* begin, const uint8_t* end) : pos_(begin), end_(end) {}
  bool done() const { return pos_ == end_; }
  // Where the next field starts: a record's bytes are the span its decode moved this over.
  const uint8_t* position() const { return pos_; }
  const char* error = nullptr;

  bool get_tag(uint8_t& tag) {
    if (pos_ == end_) return fail("record cut short");
    tag = *pos_++;
    return true;
  }

  template <class T>
  bool get(T& v) {
    if constexpr (std::is_same_v<T, uint64_t>) {
      return get_varint(pos_, end_, v) || fail("bad varint");
    } else if constexpr (std::is_same_v<T, int64_t>) {
      return get_svarint(pos_, end_, v) || fail("bad varint");
    } else if constexpr (std::is_same_v<T, std::string_view>) {
      uint64_t n;
      if (!get(n)) return false;
      if (n > static_cast<uint64_t>(end_ - pos_)) return fail("string past the chunk");
      v = std::string_view(reinterpret_cast<const char*>(pos_), n);
      pos_ += n;
      return true;
    } else if constexpr (std::is_same_v<T, DeltaAddresses>) {
      uint64_t n;
      if (!get(n)) return false;
      if (n > T::kMaxItems) return fail("implausible stack depth");
      v.decoded.resize(n);
      for (uint64_t i = 0; i < n; ++i) {
        if (i == 0) {
          if (!get(v.decoded[0])) return false;
        } else {
          int64_t delta;
          if (!get(delta)) return false;
          v.decoded[i] = v.decoded[i - 1] + static_cast<uint64_t>(delta);
        }
      }
      v.items = v.decoded;
      return true;
    } else if constexpr (detail::IsList<T>::value) {
      uint64_t n;
      if (!get(n)) return false;
      if (n > T::kMaxItems) return fail("implausible list length");
      // Each item takes at least one byte: a count past the chunk's end is corrupt.
      if (n > static_cast<uint64_t>(end_ - pos_)) return fail("list past the chunk");
      v.decoded.resize(n);
      for (auto& item : v.decoded) {
        if (!get(item)) return false;
      }
      v.items = v.decoded;
      return true;
    } else {
      return std::apply([&](auto&... f) { return (get(f) && ...); }, v.fields());
    }
  }

 private:
  bool fail(const char* why) {
    error = why;
    return false;
  }
  const uint8_t* pos_;
  const uint8_t* end_;
};

// Reads the fields of a record whose tag was just read.
template <class R>
bool decode(FieldSource& source, R& record) {
  if constexpr (std::tuple_size_v<decltype(record.fields())> == 0) {
    return true;
  } else {
    return source.get(record);
  }
}

}  // namespace memstage::trace::records
