// Aggregate mode's in-process figures (profiler/preload/aggregate.h) against full mode's
// analysis of the same event stream: random streams of allocations, frees and nested
// stages, written once as full mode's events and once through the aggregate, analysed,
// and every figure compared.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <tuple>

#include "profiler/preload/aggregate.h"
#include "reports/analysis/analyzer.h"
#include "tests/unit/trace_builder.h"

using memstage::testing::TraceBuilder;
namespace preload = memstage::preload;
namespace reports = memstage::reports;
namespace trace = memstage::trace;

namespace {

class BufferSink final : public preload::RecordSink {
 public:
  explicit BufferSink(TraceBuilder& b) : builder_(b) {}
  uint8_t* reserve(size_t bytes) override {
    buffer_.resize(bytes);
    return buffer_.data();
  }
  void commit(uint8_t* end) override { builder_.raw(buffer_.data(), static_cast<size_t>(end - buffer_.data())); }

 private:
  TraceBuilder& builder_;
  std::vector<uint8_t> buffer_;
};

reports::Report analyze(TraceBuilder& b, const std::string& name) {
  const std::string path = memstage::testing::temp_trace_path("aggregate_" + name + ".mst");
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  return reports::analyze({path}, std::nullopt, options);
}

// A stack as its return addresses: the two reports number their stacks apart.
std::vector<uint64_t> addresses(const reports::Report& r, reports::StackIndex stack) {
  std::vector<uint64_t> out;
  for (auto f : r.frames_of(r.stacks[stack])) out.push_back(r.frame(f).address);
  return out;
}
using Listed = std::vector<std::tuple<std::vector<uint64_t>, uint64_t, uint64_t>>;
Listed listed(const reports::Report& r, const std::vector<reports::StackBytes>& stacks) {
  Listed out;
  for (const auto& s : stacks) out.emplace_back(addresses(r, s.stack), s.bytes, s.blocks);
  std::sort(out.begin(), out.end());
  return out;
}
Listed leaks(const reports::Report& r) {
  Listed out;
  for (const auto& l : r.leaks) out.emplace_back(addresses(r, l.stack), l.bytes, l.blocks * 1000 + (l.stage + 1));
  std::sort(out.begin(), out.end());
  return out;
}
using Figures = std::vector<std::tuple<std::vector<uint64_t>, int, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>>;
Figures figures(const reports::Report& r) {
  Figures out;
  for (const auto& f : r.stack_figures) {
    out.emplace_back(addresses(r, f.stack), f.stage, f.allocations, f.bytes_allocated, f.temporary_allocations,
                     f.live_at_peak_bytes, f.leaked_bytes);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Sites' keys standing for the aggregate's array of sites in the site index's tests: a
// key's place is its place in the list.
struct SiteKey {
  uint32_t stack, stage_plus_one;
};
uint32_t key_hash(const std::vector<SiteKey>& keys, uint32_t i) {
  return preload::SiteSlots::hash(keys[i].stack, keys[i].stage_plus_one);
}
void index_over(preload::SiteSlots& slots, const std::vector<SiteKey>& keys) {
  slots.use_hashes(&keys, [](const void* sites, uint32_t i) {
    return key_hash(*static_cast<const std::vector<SiteKey>*>(sites), i);
  });
}

void same_figures(const reports::MemoryFigures& a, const reports::MemoryFigures& f) {
  CHECK(a.peak_heap_bytes == f.peak_heap_bytes);
  CHECK(a.peak_heap_time_s == f.peak_heap_time_s);
  CHECK(a.allocations == f.allocations);
  CHECK(a.frees == f.frees);
  CHECK(a.bytes_allocated == f.bytes_allocated);
  CHECK(a.temporary_allocations == f.temporary_allocations);
  CHECK(a.leaked_bytes == f.leaked_bytes);
  CHECK(a.leaked_blocks == f.leaked_blocks);
}

}  // namespace

TEST_CASE("aggregate mode's figures are full mode's on random streams of nested stages") {
  const unsigned seed = GENERATE(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u);
  std::mt19937 random(seed);
  // Many stacks: sites outgrow the aggregate's first array, and it forgets idle ones.
  const int kStacks = seed > 4 ? 300 : 8;
  TraceBuilder full, aggregated;
  full.process(100, trace::Mode::kFull);
  aggregated.process(100, trace::Mode::kAggregate);
  for (int i = 0; i < kStacks; ++i) {
    full.stack({0x1000u + 0x10u * i, 0x9000});
    aggregated.stack({0x1000u + 0x10u * i, 0x9000});
  }
  full.stage_name("s");
  aggregated.stage_name("s");

  preload::HeapAggregate aggregate;
  BufferSink sink(aggregated);
  std::vector<uint64_t> live;
  std::vector<uint32_t> open_stages;
  uint32_t stage_instances = 0;
  uint64_t next_address = 0x10000, t_ns = 0, last_alloc = 0;
  bool last_was_alloc = false;
  const auto both_record = [&](auto record_into) {
    aggregate.before_record(sink);
    record_into(full);
    record_into(aggregated);
  };
  for (int op = 0; op < 4000; ++op) {
    const int what = static_cast<int>(random() % 100);
    if (what < 45) {  // an allocation; sizes collide so that sites hold many blocks
      const auto stack = static_cast<uint32_t>(random() % kStacks);
      uint64_t size = (random() % 4 == 0) ? 4096 * (1 + random() % 8) : 16 * (1 + random() % 8);
      if (random() % 400 == 0) size = (5ull << 30) + size;  // a size the aggregate keeps aside
      const uint64_t address = next_address += 0x10;
      const uint32_t stage_plus_one = open_stages.empty() ? 0 : open_stages.back() + 1;
      full.alloc(address, size, stack);
      REQUIRE(aggregate.allocate(address, size, static_cast<uint32_t>(aggregated.stack_node(stack)), stage_plus_one, sink));
      live.push_back(address);
      last_alloc = address;
      last_was_alloc = true;
    } else if (what < 82) {  // a free: often the latest block (a temporary)
      if (live.empty()) continue;
      const size_t i = random() % 3 == 0 ? live.size() - 1 : random() % live.size();
      const uint64_t address = live[i];
      live.erase(live.begin() + static_cast<ptrdiff_t>(i));
      full.free(address);
      REQUIRE(aggregate.free(address, last_was_alloc && address == last_alloc));
      last_was_alloc = false;
    } else if (what < 88) {
      if (open_stages.size() == 4) continue;
      t_ns += 1000;
      aggregate.before_record(sink);
      aggregate.stage_begin(stage_instances);
      full.stage_begin(0, t_ns);
      aggregated.stage_begin(0, t_ns);
      open_stages.push_back(stage_instances++);
    } else if (what < 94) {
      if (open_stages.empty()) continue;
      t_ns += 1000;
      aggregate.before_record(sink);
      aggregate.stage_end(sink);
      full.stage_end(t_ns);
      aggregated.stage_end(t_ns);
      open_stages.pop_back();
    } else if (what < 98) {
      t_ns += 1000;
      both_record([&](TraceBuilder& b) { b.time(t_ns).rss(t_ns, 1 << 20); });
    } else {
      aggregate.snapshot(t_ns, sink);  // in between: a site's counts written in parts
    }
  }
  // Half the runs end normally, half as a killed process with stages open.
  const bool ends = seed % 2 == 0;
  while (ends && !open_stages.empty()) {
    aggregate.before_record(sink);
    aggregate.stage_end(sink);
    full.stage_end(t_ns);
    aggregated.stage_end(t_ns);
    open_stages.pop_back();
  }
  aggregate.snapshot(t_ns, sink);
  if (ends) {
    full.end(t_ns + 1);
    aggregated.end(t_ns + 1);
  }
  const auto f = analyze(full, "full" + std::to_string(seed));
  const auto a = analyze(aggregated, "aggregated" + std::to_string(seed));
  aggregate.reset();

  INFO("seed " << seed);
  CHECK(a.mode == "aggregate");
  same_figures(a.totals, f.totals);
  CHECK(listed(a, a.top_stacks_at_peak) == listed(f, f.top_stacks_at_peak));
  REQUIRE(a.stages.size() == f.stages.size());
  for (size_t i = 0; i < f.stages.size(); ++i) {
    INFO("stage " << i);
    same_figures(a.stages[i].figures, f.stages[i].figures);
    CHECK(a.stages[i].retained_bytes == f.stages[i].retained_bytes);
    CHECK(a.stages[i].closed == f.stages[i].closed);
    CHECK(listed(a, a.stages[i].top_stacks_at_peak) == listed(f, f.stages[i].top_stacks_at_peak));
  }
  CHECK(leaks(a) == leaks(f));
  CHECK(figures(a) == figures(f));
  REQUIRE(a.timeline.size() == f.timeline.size());
  for (size_t i = 0; i < f.timeline.size(); ++i) CHECK(a.timeline[i].heap_bytes == f.timeline[i].heap_bytes);
}

// A trace cut short (no end, a site not written since it allocated) may list a stack at
// the run's peak that no kAggSite names: it is resolved with the sites', before the tree
// is let go.
TEST_CASE("aggregate mode: a stack listed at the run's peak but in no site record is named in the report") {
  TraceBuilder b;
  b.process(100, trace::Mode::kAggregate);
  b.stack({0x1000, 0x9000});
  b.stack({0x2000, 0x9000});
  const auto written = b.stack_node(0);
  const auto unwritten = b.stack_node(1);
  b.record(trace::records::AggHeap{300, 300});
  b.record(trace::records::AggSite{written, 0, 1, 100, 0, 100, 1});
  b.record(trace::records::AggPeakSite{written, 0, 100, 1});
  b.record(trace::records::AggPeakSite{unwritten, 0, 200, 1});
  b.record(trace::records::AggSnapshot{1000, 2, 0, 300, 0});
  const auto r = analyze(b, "peak_stack_unwritten");
  REQUIRE(r.top_stacks_at_peak.size() == 2);
  CHECK(addresses(r, r.top_stacks_at_peak[0].stack) == std::vector<uint64_t>{0x2000, 0x9000});
  CHECK(r.top_stacks_at_peak[0].bytes == 200u);
  CHECK(addresses(r, r.top_stacks_at_peak[1].stack) == std::vector<uint64_t>{0x1000, 0x9000});
}

// Format 5: a site's counts in kAggSite are increments (the tracer forgets idle sites and
// takes them up again from zero); before, each record carried the totals so far.
TEST_CASE("aggregate mode's site counts add up from format 5 and are the latest totals before") {
  const uint32_t version = GENERATE(4u, 5u);
  TraceBuilder b(version);
  b.process(100, trace::Mode::kAggregate);
  b.stack({0x1000, 0x9000});
  const auto node = b.stack_node(0);
  b.record(trace::records::AggSite{node, 0, 3, 300, 1, 100, 1});
  b.record(trace::records::AggSnapshot{1000, 3, 2, 300, 1});
  b.record(trace::records::AggSite{node, 0, 2, 250, 0, 150, 2});
  b.record(trace::records::AggSnapshot{2000, 5, 3, 550, 1});
  b.end(3000);
  const auto r = analyze(b, "site_counts" + std::to_string(version));
  REQUIRE(r.stack_figures.size() == 1);
  const auto& f = r.stack_figures[0];
  INFO("version " << version);
  CHECK(f.allocations == (version >= 5 ? 5u : 2u));
  CHECK(f.bytes_allocated == (version >= 5 ? 550u : 250u));
  CHECK(f.temporary_allocations == 1u * (version >= 5));
  CHECK(f.leaked_bytes == 150u);
}

// The live blocks' 12-byte slots, and the map beside them for what does not fit.
TEST_CASE("aggregate mode's live blocks give back each block's place and size, packed or aside") {
  preload::BlockSlots blocks;
  const uint64_t high_address = uint64_t{1} << 50 | 0x1000;  // past the slots' 48 bits
  const uint64_t big = preload::BlockSlots::kMaxPackedBytes + 1;
  for (uint32_t i = 0; i < 5000; ++i) {
    REQUIRE(blocks.put(0x10000 + 16 * uint64_t{i}, (1u << 24) - 2 - i, 1 + i % 4096));
  }
  REQUIRE(blocks.put(0x900000, 7, big));
  REQUIRE(blocks.put(high_address, 8, 32));
  REQUIRE(blocks.put(0x10000, 9, big));  // replaces a packed block: its free was missed
  uint32_t place = 0;
  uint64_t size = 0;
  REQUIRE(blocks.take(0x10000, place, size));
  CHECK((place == 9 && size == big));
  CHECK_FALSE(blocks.take(0x10000, place, size));
  REQUIRE(blocks.put(0x900000, 10, 64));  // replaces a block aside
  REQUIRE(blocks.take(0x900000, place, size));
  CHECK((place == 10 && size == 64));
  CHECK_FALSE(blocks.take(0x900000, place, size));
  REQUIRE(blocks.take(high_address, place, size));
  CHECK((place == 8 && size == 32));
  for (uint32_t i = 1; i < 5000; ++i) {
    REQUIRE(blocks.take(0x10000 + 16 * uint64_t{i}, place, size));
    CHECK(place == (1u << 24) - 2 - i);
    CHECK(size == 1 + i % 4096);
  }
  CHECK_FALSE(blocks.take(0x10010, place, size));
  blocks.clear();
}

// What the writer's drain reads ahead of an event to fetch its site: the place a live
// block's slot names (none for a block aside or unknown), and the index's likely place.
TEST_CASE("aggregate mode's look-aheads name the place the lookups will find") {
  preload::BlockSlots blocks;
  CHECK(blocks.place_at(0x1000) == UINT32_MAX);  // no slots yet
  for (uint32_t i = 0; i < 3000; ++i) REQUIRE(blocks.put(0x10000 + 16 * uint64_t{i}, (1u << 24) - 2 - i, 64));
  REQUIRE(blocks.put(0x900000, 7, preload::BlockSlots::kMaxPackedBytes + 1));
  CHECK(blocks.size() == 3001);
  for (uint32_t i = 0; i < 3000; ++i) CHECK(blocks.place_at(0x10000 + 16 * uint64_t{i}) == (1u << 24) - 2 - i);
  CHECK(blocks.place_at(0x900000) == UINT32_MAX);  // aside: not fetched ahead
  CHECK(blocks.place_at(0x8) == UINT32_MAX);
  uint32_t place = 0;
  uint64_t size = 0;
  REQUIRE(blocks.take(0x10000, place, size));
  CHECK(blocks.place_at(0x10000) == UINT32_MAX);
  CHECK(blocks.size() == 3000);

  std::vector<SiteKey> keys;
  for (uint32_t i = 0; i < 3000; ++i) keys.push_back(SiteKey{i * 7, i % 3});
  preload::SiteSlots slots;
  CHECK(slots.likely_place(preload::SiteSlots::hash(1, 0)) == UINT32_MAX);  // no slots yet
  index_over(slots, keys);
  for (uint32_t i = 0; i < keys.size(); ++i) REQUIRE(slots.insert(key_hash(keys, i), i));
  size_t right = 0;
  for (uint32_t i = 0; i < keys.size(); ++i) {
    const uint32_t h = preload::SiteSlots::hash(keys[i].stack, keys[i].stage_plus_one);
    const uint32_t likely = slots.likely_place(h);
    REQUIRE(likely < keys.size());
    CHECK(likely == slots.find(h, [&](uint32_t p) { return p == likely; }));  // a place on the key's probe
    right += likely == i;
  }
  CHECK(right > keys.size() * 99 / 100);  // the hash's top bits tell sites apart but rarely
}

// The aggregate's arrays grow in place or move by mremap (tracer_remap): what they held
// comes along, the entries added after a clear are zero.
TEST_CASE("the aggregate's arrays keep their entries as they grow, from one page to megabytes") {
  preload::TracerArray<uint64_t> array;
  for (uint64_t i = 0; i < 300'000; ++i) REQUIRE(array.push_back(i * 3 + 1));
  CHECK(array.size() == 300'000);
  CHECK(array.capacity() >= 300'000);
  bool kept = true;
  for (uint64_t i = 0; i < array.size(); ++i) kept = kept && array[i] == i * 3 + 1;
  CHECK(kept);
  array.clear_keeping_memory();
  REQUIRE(array.resize(400'000));  // past the capacity: remapped, the old entries zeroed
  bool zero = true;
  for (uint64_t i = 0; i < array.size(); ++i) zero = zero && array[i] == 0;
  CHECK(zero);
  array.release();
  CHECK(array.size() == 0);
}

// The index made anew (HeapAggregate::reindex_sites): emptied with room for more sites, or
// emptied as it is for fewer, it finds what is inserted again and nothing else.
TEST_CASE("aggregate mode's site index emptied and filled again finds the sites inserted since") {
  std::vector<SiteKey> keys;
  for (uint32_t i = 0; i < 5000; ++i) keys.push_back(SiteKey{i * 13 + 1, i % 5});
  const auto hash_at = [&](uint32_t i) { return key_hash(keys, i); };
  preload::SiteSlots slots;
  index_over(slots, keys);
  CHECK(slots.full());  // no slots yet
  REQUIRE(slots.empty_for(3000));
  for (uint32_t i = 0; i < 3000; ++i) {
    CHECK_FALSE(slots.full());  // the room asked for: no insert grows it
    REQUIRE(slots.insert(hash_at(i), i));
  }
  CHECK(slots.size() == 3000);
  slots.empty();  // as forgetting does; the sites at even places are kept
  CHECK(slots.size() == 0);
  for (uint32_t i = 0; i < 3000; i += 2) REQUIRE(slots.insert(hash_at(i), i));
  REQUIRE(slots.empty_for(5000));  // grown, emptied
  for (uint32_t i = 0; i < 5000; i += 2) REQUIRE(slots.insert(hash_at(i), i));
  for (uint32_t i = 0; i < 5000; ++i) {
    const uint32_t found = slots.find(hash_at(i), [&](uint32_t p) { return p == i; });
    CHECK(found == (i % 2 ? UINT32_MAX : i));
  }
}

// Forgetting leaves tombstones (SiteSlots::erase): a probe passes over them, an insert
// takes the first on its probe, and they count toward a full index until it is made anew
// or grows, which drops them.
TEST_CASE("aggregate mode's site index erases into tombstones that inserts reuse and growing drops") {
  std::vector<SiteKey> keys;
  for (uint32_t i = 0; i < 4000; ++i) keys.push_back(SiteKey{i * 7 + 3, i % 3});
  const auto hash_at = [&](uint32_t i) { return key_hash(keys, i); };
  const auto found = [&](preload::SiteSlots& slots, uint32_t i) {
    return slots.find(hash_at(i), [&](uint32_t p) { return p == i; });
  };
  preload::SiteSlots slots;
  index_over(slots, keys);
  REQUIRE(slots.empty_for(1000));
  for (uint32_t i = 0; i < 1000; ++i) REQUIRE(slots.insert(hash_at(i), i));
  for (uint32_t i = 0; i < 1000; i += 3) slots.erase(hash_at(i), i);
  CHECK(slots.size() == 666);
  bool right = true;
  for (uint32_t i = 0; i < 1000; ++i) right = right && found(slots, i) == (i % 3 ? i : UINT32_MAX);
  CHECK(right);
  // Erased ones inserted again (their tombstones or others taken), then more until full.
  for (uint32_t i = 0; i < 1000; i += 3) REQUIRE(slots.insert(hash_at(i), i));
  CHECK(slots.size() == 1000);
  uint32_t next = 1000;
  for (; !slots.full(); ++next) REQUIRE(slots.insert(hash_at(next), next));
  // Tombstones fill it as sites do: erased, they leave it full.
  for (uint32_t i = 0; i < next; i += 2) slots.erase(hash_at(i), i);
  CHECK(slots.full());
  // The next insert grows it: only the sites move, and every one is found.
  REQUIRE(slots.insert(hash_at(next), next));
  ++next;
  CHECK_FALSE(slots.full());
  CHECK(slots.size() == next / 2 + 1);  // the odd ones and the last
  right = true;
  for (uint32_t i = 0; i < next; ++i) right = right && found(slots, i) == (i % 2 || i == next - 1 ? i : UINT32_MAX);
  CHECK(right);
}

// Forgetting looks at the idle candidates only (PlaceList::retain_if): listed, or past a
// list's length as bits, the places kept are those the visit keeps, each visited once.
TEST_CASE("aggregate mode's place lists keep the places a visit keeps, listed or as bits") {
  const size_t sites = GENERATE(size_t{2000}, size_t{200'000});  // a list, then bits
  preload::PlaceList places;
  std::vector<uint32_t> added;
  for (uint32_t p = 1; p < sites; p += 7) {
    places.add(p, sites);
    added.push_back(p);
  }
  std::vector<uint32_t> visited;
  places.retain_if(sites, [&](uint32_t p) {
    visited.push_back(p);
    return p % 2 == 0;
  });
  std::sort(visited.begin(), visited.end());
  CHECK(visited == added);
  std::vector<uint32_t> left;
  places.for_each(sites, [&](uint32_t p) { left.push_back(p); });
  std::sort(left.begin(), left.end());
  std::vector<uint32_t> even;
  for (uint32_t p : added) {
    if (p % 2 == 0) even.push_back(p);
  }
  CHECK(left == even);
  places.release();
}
