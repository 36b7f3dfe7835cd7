// Aggregate mode's in-process figures (trace_format.h, kAggHeap and after): the writer
// thread folds each allocation and free, in the process's event order, into figures per
// site, a (stack, stage instance), and writes those instead of the events. What it writes
// grows with the distinct sites and stages, not with the run's length; what it keeps, with
// the sites in use: a site holding nothing that no copy below holds is written and
// forgotten when the array of sites is full, and met again starts from zero (kAggSite's
// counts are increments). Only sites that let go of their last block since are looked at
// then, not the whole array.
//
// The stacks holding memory at a peak are exact without copying every site at every new
// high: the current live bytes per site are kept beside a saved copy at the peak, with a
// list of the sites changed since the copy was last made equal. A new high only marks the
// copy stale; the first event that lowers the heap after it (or a stage edge, a snapshot,
// a forgetting) copies the changed sites alone. Each change is copied at most once:
// amortised O(1) per event. Two copies are kept: per site at the run's peak, and per site
// at the peak of the innermost open stage, whose top stacks are its sites summed per stack
// (an outer stage whose peak is in that copy takes its top stacks out of it before it is
// overwritten). Full mode's analysis takes the same figures from the events
// (reports/analysis); the e2e tests hold the two equal.
//
// Writer thread only; all memory from tracer_map.
#pragma once

#include <cstddef>
#include <cstdint>

#include "profiler/preload/block_slots.h"
#include "profiler/preload/site_slots.h"
#include "profiler/preload/tracer_memory.h"
#include "profiler/trace/trace_format.h"
#include "profiler/trace/trace_records.h"

namespace memstage::preload {

// Where the aggregate's records go: the writer's raw chunk buffer.
class RecordSink {
 public:
  virtual uint8_t* reserve(size_t bytes) = 0;  // room for `bytes` more
  virtual void commit(uint8_t* end) = 0;       // what was written ends here
 protected:
  ~RecordSink() = default;
};

// A growable array of trivially copyable, zero-initialisable T in tracer memory.
template <class T>
class TracerArray {
 public:
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Grows to at least n entries, the new ones zeroed; false when out of memory.
  bool resize(size_t n);
  bool push_back(const T& v) {
    if (!resize(size_ + 1)) return false;
    data_[size_ - 1] = v;
    return true;
  }
  void clear_keeping_memory() { size_ = 0; }
  void pop_back() { --size_; }
  void resize_down(size_t n) { size_ = n < size_ ? n : size_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  void release();

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Places in the aggregate's array of sites to visit later, each marked by a flag of its
// own in the site. Past an eighth of the sites it lists none and sets a bit a place
// instead: a list that long cost the traced program more memory than the bits, and a walk
// of the bits costs the writer a word for 64 sites. Out of tracer memory for either, every
// site is visited (their flags say which).
class PlaceList {
 public:
  // The first places are listed whatever the sites' count: a small program has no bits.
  static constexpr size_t kAlwaysListed = 1024;
  void add(uint32_t place, size_t site_count) {
    if (mode_ == Mode::kList) {
      const size_t limit = site_count / 8 > kAlwaysListed ? site_count / 8 : kAlwaysListed;
      if (places_.size() < limit && places_.push_back(place)) return;
      to_bits(site_count);
    }
    if (mode_ == Mode::kBits && !set_bit(place)) mode_ = Mode::kEverySite;
  }
  // Calls visit(place) for each place added since clear() (and, from the bits or all
  // sites, places whose site's flag may be clear: the visit checks it).
  template <class Visit>
  void for_each(size_t site_count, Visit visit) const {
    if (mode_ == Mode::kList) {
      for (size_t i = 0; i < places_.size(); ++i) visit(places_[i]);
    } else if (mode_ == Mode::kEverySite) {
      for (size_t i = 0; i < site_count; ++i) visit(static_cast<uint32_t>(i));
    } else {
      for (size_t word = 0; word < bits_.size(); ++word) {
        for (uint64_t w = bits_[word]; w; w &= w - 1) visit(static_cast<uint32_t>(word * 64 + __builtin_ctzll(w)));
      }
    }
  }
  // Visits each place as for_each does; a place stays for which keep(place) is true (from
  // every site, the visit's flag decides).
  template <class Keep>
  void retain_if(size_t site_count, Keep keep) {
    if (mode_ == Mode::kList) {
      size_t kept = 0;
      for (size_t i = 0; i < places_.size(); ++i) {
        if (keep(places_[i])) places_[kept++] = places_[i];
      }
      places_.resize_down(kept);
    } else if (mode_ == Mode::kEverySite) {
      for (size_t i = 0; i < site_count; ++i) keep(static_cast<uint32_t>(i));
    } else {
      for (size_t word = 0; word < bits_.size(); ++word) {
        uint64_t kept = bits_[word];
        for (uint64_t w = kept; w; w &= w - 1) {
          const int bit = __builtin_ctzll(w);
          if (!keep(static_cast<uint32_t>(word * 64 + bit))) kept &= ~(uint64_t{1} << bit);
        }
        bits_[word] = kept;
      }
    }
  }
  void clear() {
    places_.clear_keeping_memory();
    if (mode_ != Mode::kList) {
      for (size_t word = 0; word < bits_.size(); ++word) bits_[word] = 0;
    }
    mode_ = Mode::kList;
  }
  void release() {
    places_.release();
    bits_.release();
    mode_ = Mode::kList;
  }
  TracerArray<uint32_t>& listed() { return places_; }

 private:
  enum class Mode : uint8_t { kList, kBits, kEverySite };
  void to_bits(size_t site_count) {
    mode_ = Mode::kBits;
    if (!bits_.resize(site_count / 64 + 1)) {
      mode_ = Mode::kEverySite;
      return;
    }
    for (size_t i = 0; i < places_.size(); ++i) set_bit(places_[i]);
    places_.clear_keeping_memory();
  }
  bool set_bit(uint32_t place) {
    if (place / 64 >= bits_.size() && !bits_.resize(place / 64 + 1)) return false;
    bits_[place / 64] |= uint64_t{1} << (place % 64);
    return true;
  }

  TracerArray<uint32_t> places_;
  TracerArray<uint64_t> bits_;  // a bit a place, once past the list's limit
  Mode mode_ = Mode::kList;
};

class HeapAggregate {
 public:
  // The most stacks listed at a stage's peak or at the RAM limit (the analysis lists 20
  // by default).
  static constexpr uint32_t kTopStacks = 32;

  void reset();  // forgets everything and gives its memory back

  // An allocation (or a realloc's allocation half) of `size` bytes at `address` in stage
  // instance stage_plus_one - 1 (0: outside any stage). False when out of memory: the
  // event is lost. May write the sites it forgets to `out` (forget_idle_sites).
  bool allocate(uint64_t address, uint64_t size, uint32_t stack, uint32_t stage_plus_one, RecordSink& out);
  // A free; `temporary`: of the latest allocation, nothing allocated since. False for a
  // block it never saw allocated (nothing changes).
  bool free(uint64_t address, bool temporary);
  // The writer's drain, some events ahead of allocate() and free(): the slots they will
  // look up, then, closer (those slots cached by then), the site the slots name.
  void prefetch_allocate_slots(uint64_t address, uint32_t stack, uint32_t stage_plus_one) const {
    blocks_.prefetch(address);
    slots_.prefetch(SiteSlots::hash(stack, stage_plus_one));
  }
  void prefetch_free_slot(uint64_t address) const { blocks_.prefetch(address); }
  void prefetch_allocate_site(uint32_t stack, uint32_t stage_plus_one) const {
    prefetch_site(slots_.likely_place(SiteSlots::hash(stack, stage_plus_one)));
  }
  void prefetch_free_site(uint64_t address) const { prefetch_site(blocks_.place_at(address)); }
  uint64_t live_blocks() const { return blocks_.size(); }

  // Stage edges, in event order; `instance` numbered by the order stages begin.
  void stage_begin(uint32_t instance);
  void stage_end(RecordSink& out);
  // Before any other record: the heap since the previous one (kAggHeap), if it moved.
  void before_record(RecordSink& out);
  // After a kRamLimit record: the stacks holding the most now.
  void ram_limit(RecordSink& out);
  // Writes the sites changed since the last snapshot, the open stages, the run's peak if
  // it moved, and kAggSnapshot with the totals.
  void snapshot(uint64_t t_ns, RecordSink& out);

 private:
  // Packed to 44 bytes, its 8-byte figures unaligned (x86-64 and arm64 read those whole):
  // the sites are most of the tracer's memory in aggregate mode.
  struct __attribute__((packed)) Site {
    uint32_t stack;
    uint32_t stage_plus_one;
    uint32_t live_blocks, peak_blocks;
    // The counts since its last kAggSite record (trace_format.h: from version 5 these are
    // increments), written before they pass kMaxCountSinceWritten or 4 GiB.
    uint32_t allocations;
    uint32_t temporary_allocations : 27;
    uint32_t changed : 1;         // since the last snapshot, listed in changed_sites_
    uint32_t peak_stale : 1;      // since the run peak's copy, listed in peak_stale_sites_
    uint32_t peak_unwritten : 1;  // its copy at the run peak changed since a snapshot wrote it
    uint32_t stage_stale : 1;     // since the stage peak's copy, listed in stage_stale_sites_
    uint32_t idle_candidate : 1;  // holds no block, listed in idle_candidates_
    uint32_t bytes_allocated;
    uint64_t live_bytes;
    uint64_t peak_bytes;  // the copy at the run's peak
  };
  static_assert(sizeof(Site) == 44);
  static constexpr uint32_t kMaxCountSinceWritten = (1u << 27) - 2;  // a temporary may add one more
  // A site's copy at the innermost stage's peak, beside sites_ (same places) once a stage
  // began: a program without stages does without. Packed as the sites are.
  struct __attribute__((packed)) SavedCopy {
    uint64_t bytes;
    uint32_t blocks;
  };
  struct StageFigures {
    int64_t live_self_bytes;  // live bytes allocated in this instance itself
    uint64_t frees;           // made while it was the innermost stage
  };
  enum class PeakStacks : uint8_t { kNone, kSaved, kListed };
  struct Level {
    uint32_t instance;
    PeakStacks where;
    uint32_t top_count;
    uint64_t peak_bytes;
    trace::records::AggStackBytes top[kTopStacks];
  };
  // Site::stack of a place in sites_ free for reuse (no stack id is this high).
  static constexpr uint32_t kForgotten = UINT32_MAX;

  // A packed site may straddle two cache lines: both are fetched.
  void prefetch_site(uint32_t place) const {
    if (place >= sites_.size()) return;
    const auto* site = reinterpret_cast<const uint8_t*>(&sites_[place]);
    prefetch_line(site);
    prefetch_line(site + sizeof(Site) - 1);
  }
  uint32_t site_of(uint32_t stack, uint32_t stage_plus_one, RecordSink& out);
  uint32_t new_site(uint32_t stack, uint32_t stage_plus_one, RecordSink& out);
  // When sites_ is full: writes and forgets the sites that hold nothing and no copy holds,
  // which are then the same as sites never met (kAggSite's counts are increments). Looks
  // at the idle candidates only.
  void forget_idle_sites(RecordSink& out);
  bool idle(const Site& site) const;
  // Inserts every site kept into the emptied index, in place order (when it is full: of
  // sites and of the tombstones forgetting leaves).
  void reindex_sites();
  void forget_place(uint32_t place);
  void drop_forgotten(PlaceList& list);
  // `more_bytes`: of an allocation too large for the site's count, written with it.
  void write_site(Site& site, RecordSink& out, uint64_t more_bytes = 0);
  void write_run_peak(RecordSink& out);
  void note_change(Site& site);
  void make_copies_current();
  // The top stacks by live bytes (saved: the stage peak's copy; else now), largest first:
  // the sites summed per stack.
  uint32_t top_stacks(bool saved, trace::records::AggStackBytes* out);
  void list_saved_level(Level& level);
  uint64_t retained_bytes(uint32_t instance) const;
  void write_stage(uint32_t instance, bool closed, const trace::records::AggStackBytes* top, uint32_t count,
                   RecordSink& out);

  BlockSlots blocks_;
  TracerArray<Site> sites_;
  TracerArray<SavedCopy> saved_;  // empty until the first stage begins
  bool stages_began_ = false;
  TracerArray<trace::records::AggStackBytes> scratch_;  // top_stacks' sums per stack
  SiteSlots slots_;
  // The places in sites_ free for reuse: the first's, and in each its Site::allocations the
  // next one's (0: none), so that forgetting needs no memory of its own.
  uint32_t first_forgotten_plus_one_ = 0;
  bool grow_before_forgetting_ = false;    // the last forgetting freed little
  PlaceList changed_sites_;
  PlaceList peak_stale_sites_;
  PlaceList peak_unwritten_sites_;  // what the next snapshot writes of the run peak
  // Sites that let go of their last block: those forgetting looks at. One a copy at a
  // peak still holds stays listed until the copy lets go of it too.
  PlaceList idle_candidates_;
  // Listed only while a stage is open; on the first begin the whole copy is stale (every
  // site copied, flagged or not).
  PlaceList stage_stale_sites_;
  bool stage_copy_all_ = false;
  TracerArray<StageFigures> stages_;
  Level* levels_ = nullptr;  // kMaxStageDepth, mapped on the first stage
  uint32_t depth_ = 0;
  int saved_outer_level_ = -1;  // an outer level whose peak is the stage copy, or -1

  uint64_t live_bytes_ = 0;
  uint64_t interval_high_bytes_ = 0;
  bool heap_moved_ = false;
  uint64_t run_peak_bytes_ = 0;
  bool run_copy_pending_ = false;    // a new run high since the copy was made current
  bool stage_copy_pending_ = false;  // a new high of the innermost stage, likewise
  bool run_peak_moved_ = false;      // since the last snapshot wrote it
  uint64_t allocations_ = 0, frees_ = 0, bytes_allocated_ = 0, temporary_allocations_ = 0;
};

}  // namespace memstage::preload
