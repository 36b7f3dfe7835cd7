#include "profiler/preload/aggregate.h"

#include <algorithm>
#include <cstring>

#include "profiler/preload/tracer_memory.h"

namespace memstage::preload {

namespace records = trace::records;

template <class T>
bool TracerArray<T>::resize(size_t n) {
  if (n <= size_) return true;
  if (n > capacity_) {
    size_t capacity = capacity_ ? capacity_ : 4096 / sizeof(T) + 1;
    // By a quarter, not double: the site array's size is the tracer's at a peak, and the
    // sites met since it last grew are what the next forgetting frees.
    while (capacity < n) capacity += capacity / 4 + 1;
    // Remapped, not copied: the tracer's memory at a growth is the array once, not twice.
    void* bigger = data_ ? tracer_remap(data_, capacity_ * sizeof(T), capacity * sizeof(T))
                         : tracer_map(capacity * sizeof(T));
    if (!bigger) return false;
    data_ = static_cast<T*>(bigger);
    capacity_ = capacity;
  }
  // Entries past size_ may hold what was there before a clear_keeping_memory.
  memset(static_cast<void*>(data_ + size_), 0, (n - size_) * sizeof(T));
  size_ = n;
  return true;
}

template <class T>
void TracerArray<T>::release() {
  if (data_) tracer_unmap(data_, capacity_ * sizeof(T));
  data_ = nullptr;
  size_ = capacity_ = 0;
}

// The lists' arrays, instantiated whole (the unit tests use them alone).
template class TracerArray<uint32_t>;
template class TracerArray<uint64_t>;

namespace {

// Largest bytes first, then the lower stack id: the order full mode's analysis lists.
constexpr size_t kKeptScratchBytes = 256u << 10;

bool ranks_before(const records::AggStackBytes& a, const records::AggStackBytes& b) {
  return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
}

}  // namespace

void HeapAggregate::reset() {
  blocks_.clear();
  sites_.release();
  scratch_.release();
  grow_before_forgetting_ = false;
  slots_.clear();
  first_forgotten_plus_one_ = 0;
  changed_sites_.release();
  peak_stale_sites_.release();
  peak_unwritten_sites_.release();
  idle_candidates_.release();
  stage_stale_sites_.release();
  stage_copy_all_ = false;
  stages_.release();
  if (levels_) tracer_unmap(levels_, trace::kMaxStageDepth * sizeof(Level));
  levels_ = nullptr;
  depth_ = 0;
  saved_outer_level_ = -1;
  live_bytes_ = interval_high_bytes_ = run_peak_bytes_ = 0;
  heap_moved_ = run_copy_pending_ = stage_copy_pending_ = run_peak_moved_ = false;
  allocations_ = frees_ = bytes_allocated_ = temporary_allocations_ = 0;
}

// UINT32_MAX when out of memory.
uint32_t HeapAggregate::site_of(uint32_t stack, uint32_t stage_plus_one, RecordSink& out) {
  const uint32_t place = slots_.find(SiteSlots::hash(stack, stage_plus_one), [&](uint32_t i) {
    return sites_[i].stack == stack && sites_[i].stage_plus_one == stage_plus_one;
  });
  return place != UINT32_MAX ? place : new_site(stack, stage_plus_one, out);
}

uint32_t HeapAggregate::new_site(uint32_t stack, uint32_t stage_plus_one, RecordSink& out) {
  if (first_forgotten_plus_one_ == 0 && sites_.size() > 0 && sites_.size() == sites_.capacity()) {
    if (grow_before_forgetting_) {
      grow_before_forgetting_ = false;
    } else {
      forget_idle_sites(out);
    }
  }
  // Grown from the sites in order, before this one's place is taken (a new place's key is
  // not set yet).
  if (slots_.full()) {
    // Room for every place and half as many tombstones: made anew once in a few forgettings.
    const size_t room = std::max<size_t>(slots_.size() + 1, sites_.size() + sites_.size() / 2);
    if (!slots_.empty_for(room)) return UINT32_MAX;
    reindex_sites();
  }
  uint32_t place;
  if (first_forgotten_plus_one_ > 0) {
    place = first_forgotten_plus_one_ - 1;
    first_forgotten_plus_one_ = sites_[place].allocations;
  } else {
    // The index's slots hold places below kMaxPlaces: past them the event is lost.
    if (sites_.size() >= SiteSlots::kMaxPlaces || !sites_.push_back(Site{})) return UINT32_MAX;
    place = static_cast<uint32_t>(sites_.size() - 1);
  }
  // The key first: the index finds a slot's place to probe from by its site's key.
  sites_[place].stack = stack;
  sites_[place].stage_plus_one = stage_plus_one;
  slots_.use_hashes(&sites_, [](const void* sites, uint32_t i) {
    const Site& site = (*static_cast<const TracerArray<Site>*>(sites))[i];
    return SiteSlots::hash(site.stack, site.stage_plus_one);
  });
  if (!slots_.insert(SiteSlots::hash(stack, stage_plus_one), place)) {
    forget_place(place);
    return UINT32_MAX;
  }
  if (stages_began_ && !saved_.resize(sites_.size())) {
    slots_.erase(SiteSlots::hash(stack, stage_plus_one), place);
    forget_place(place);
    return UINT32_MAX;
  }
  if (stages_began_) saved_[place] = SavedCopy{};
  Site& site = sites_[place];
  site = Site{};
  site.stack = stack;
  site.stage_plus_one = stage_plus_one;
  return place;
}

// A site that holds no block, whose copies at the peaks hold none either and whose copy at
// the run peak is written: nothing of it is left to write but its counts.
bool HeapAggregate::idle(const Site& site) const {
  const size_t place = static_cast<size_t>(&site - &sites_[0]);
  return site.stack != kForgotten && site.live_blocks == 0 && site.peak_blocks == 0 &&
         (!stages_began_ || saved_[place].blocks == 0) && !site.peak_unwritten;
}

void HeapAggregate::forget_idle_sites(RecordSink& out) {
  // What the copies at the peaks hold of a site is written or made current first: an idle
  // site may be one the run peak no longer holds. (Before an allocation: the heap now is
  // the heap at a high not copied yet.)
  make_copies_current();
  write_run_peak(out);
  // A forgotten site's slot is a cache miss in an index of megabytes: fetched
  // kErasesAhead forgettings before it is erased.
  constexpr size_t kErasesAhead = 8;
  struct Erase {
    uint32_t hash, place;
  } erases[kErasesAhead];
  size_t forgotten = 0;
  idle_candidates_.retain_if(sites_.size(), [&](uint32_t place) {
    Site& site = sites_[place];
    if (!site.idle_candidate) return false;
    if (site.live_blocks > 0) {
      site.idle_candidate = 0;  // listed again once it frees its last block
      return false;
    }
    if (!idle(site)) return true;
    if (site.changed) write_site(site, out);
    Erase& erase = erases[forgotten % kErasesAhead];
    if (forgotten >= kErasesAhead) slots_.erase(erase.hash, erase.place);
    erase = Erase{SiteSlots::hash(site.stack, site.stage_plus_one), place};
    slots_.prefetch(erase.hash);
    site.changed = site.peak_stale = site.stage_stale = site.idle_candidate = 0;
    forget_place(place);
    ++forgotten;
    return false;
  });
  for (size_t i = forgotten > kErasesAhead ? forgotten - kErasesAhead : 0; i < forgotten; ++i) {
    slots_.erase(erases[i % kErasesAhead].hash, erases[i % kErasesAhead].place);
  }
  // The lists name sites by place: the forgotten ones leave them before a place is reused
  // (their bits may stay: a visit checks the site's flag, which forgetting cleared).
  drop_forgotten(changed_sites_);
  drop_forgotten(peak_stale_sites_);
  drop_forgotten(stage_stale_sites_);
  // Fewer than an eighth forgotten: sites_ grows the next time it is full, so that each
  // site met is looked at here a bounded number of times.
  grow_before_forgetting_ = forgotten * 8 < sites_.size();
}

// The index has room for them all (SiteSlots::empty_for, or empty with fewer sites than
// it held): no insert grows it.
// Each insert's slot, in an index of megabytes, is fetched kAhead sites before it.
void HeapAggregate::reindex_sites() {
  constexpr size_t kAhead = 16;
  const auto hash_at = [this](size_t i) { return SiteSlots::hash(sites_[i].stack, sites_[i].stage_plus_one); };
  for (size_t i = 0; i < sites_.size(); ++i) {
    if (i + kAhead < sites_.size()) slots_.prefetch(hash_at(i + kAhead));
    if (sites_[i].stack != kForgotten) slots_.insert(hash_at(i), static_cast<uint32_t>(i));
  }
}

// The place goes on the list of places free for reuse, linked through their sites.
void HeapAggregate::forget_place(uint32_t place) {
  Site& site = sites_[place];
  site.stack = kForgotten;
  site.allocations = first_forgotten_plus_one_;
  first_forgotten_plus_one_ = place + 1;
}

void HeapAggregate::drop_forgotten(PlaceList& places) {
  TracerArray<uint32_t>& list = places.listed();
  size_t kept = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (sites_[list[i]].stack != kForgotten) list[kept++] = list[i];
  }
  list.resize_down(kept);
}

void HeapAggregate::write_site(Site& site, RecordSink& out, uint64_t more_bytes) {
  const records::AggSite record{site.stack,
                                site.stage_plus_one,
                                site.allocations,
                                site.bytes_allocated + more_bytes,
                                site.temporary_allocations,
                                site.live_bytes,
                                site.live_blocks};
  out.commit(records::encode(out.reserve(records::max_encoded_bytes<records::AggSite>()), record));
  site.allocations = site.temporary_allocations = 0;
  site.bytes_allocated = 0;
}

// Every change is listed once per copy: what the next copy or snapshot must look at.
void HeapAggregate::note_change(Site& site) {
  const auto index = static_cast<uint32_t>(&site - &sites_[0]);
  if (!site.changed) {
    site.changed = 1;
    changed_sites_.add(index, sites_.size());
  }
  if (!site.peak_stale) {
    site.peak_stale = 1;
    peak_stale_sites_.add(index, sites_.size());
  }
  if (depth_ == 0 || site.stage_stale) return;
  site.stage_stale = 1;
  stage_stale_sites_.add(index, sites_.size());
}

bool HeapAggregate::allocate(uint64_t address, uint64_t size, uint32_t stack, uint32_t stage_plus_one,
                             RecordSink& out) {
  if (stage_plus_one > stages_.size() && !stages_.resize(stage_plus_one)) return false;
  const uint32_t index = site_of(stack, stage_plus_one, out);
  if (index == UINT32_MAX) return false;
  Site& site = sites_[index];
  if (site.live_blocks == UINT32_MAX) return false;
  if (site.allocations == kMaxCountSinceWritten || size > UINT32_MAX - site.bytes_allocated) write_site(site, out);
  ++site.allocations;
  site.live_bytes += size;
  ++site.live_blocks;
  if (size > UINT32_MAX) {
    write_site(site, out, size);  // 4 GiB or more: its bytes are written at once
  } else {
    site.bytes_allocated += static_cast<uint32_t>(size);
  }
  note_change(site);
  if (stage_plus_one) stages_[stage_plus_one - 1].live_self_bytes += static_cast<int64_t>(size);
  ++allocations_;
  bytes_allocated_ += size;
  blocks_.put(address, index, size);

  live_bytes_ += size;
  heap_moved_ = true;
  if (live_bytes_ > interval_high_bytes_) interval_high_bytes_ = live_bytes_;
  if (live_bytes_ > run_peak_bytes_) {
    run_peak_bytes_ = live_bytes_;
    run_copy_pending_ = true;
  }
  // As full mode's analysis: a new high raises the innermost stage's peak; its parents
  // take it when it ends.
  if (depth_ > 0 && live_bytes_ > levels_[depth_ - 1].peak_bytes) {
    levels_[depth_ - 1].peak_bytes = live_bytes_;
    levels_[depth_ - 1].where = PeakStacks::kSaved;
    stage_copy_pending_ = true;
  }
  return true;
}

bool HeapAggregate::free(uint64_t address, bool temporary) {
  uint32_t place;
  uint64_t size;
  if (!blocks_.take(address, place, size)) return false;
  // The heap is at a high until now: the copies must hold it before it goes down.
  make_copies_current();
  Site& site = sites_[place];
  site.live_bytes -= size;
  --site.live_blocks;
  note_change(site);
  if (site.live_blocks == 0 && !site.idle_candidate) {
    site.idle_candidate = 1;
    idle_candidates_.add(place, sites_.size());
  }
  if (site.stage_plus_one) stages_[site.stage_plus_one - 1].live_self_bytes -= static_cast<int64_t>(size);
  if (depth_ > 0) ++stages_[levels_[depth_ - 1].instance].frees;
  ++frees_;
  if (temporary) {
    ++site.temporary_allocations;
    ++temporary_allocations_;
  }
  live_bytes_ -= size;
  heap_moved_ = true;
  return true;
}

void HeapAggregate::make_copies_current() {
  if (run_copy_pending_) {
    peak_stale_sites_.for_each(sites_.size(), [&](uint32_t place) {
      Site& site = sites_[place];
      if (!site.peak_stale) return;
      site.peak_stale = 0;
      if (site.peak_bytes == site.live_bytes && site.peak_blocks == site.live_blocks) return;
      site.peak_bytes = site.live_bytes;
      site.peak_blocks = site.live_blocks;
      if (site.peak_unwritten) return;
      site.peak_unwritten = 1;
      peak_unwritten_sites_.add(place, sites_.size());
    });
    peak_stale_sites_.clear();
    run_copy_pending_ = false;
    run_peak_moved_ = true;
  }
  if (stage_copy_pending_) {
    // The copy is about to move to the innermost stage's new high: an outer stage whose
    // peak it holds lists its stacks first.
    if (saved_outer_level_ >= 0) list_saved_level(levels_[saved_outer_level_]);
    saved_outer_level_ = -1;
    const auto copy = [&](uint32_t place) {
      Site& site = sites_[place];
      saved_[place] = SavedCopy{site.live_bytes, site.live_blocks};
      site.stage_stale = 0;
    };
    if (stage_copy_all_) {
      for (size_t i = 0; i < sites_.size(); ++i) copy(static_cast<uint32_t>(i));
    } else {
      stage_stale_sites_.for_each(sites_.size(), copy);  // a copy of a site not stale is the same
    }
    stage_stale_sites_.clear();
    stage_copy_all_ = stage_copy_pending_ = false;
  }
}

uint32_t HeapAggregate::top_stacks(bool saved, records::AggStackBytes* out) {
  scratch_.clear_keeping_memory();
  for (size_t i = 0; i < sites_.size(); ++i) {
    const Site& site = sites_[i];
    const uint32_t blocks = saved ? saved_[i].blocks : site.live_blocks;
    if (blocks == 0) continue;
    // Out of tracer memory: the stacks listed are those summed so far.
    if (!scratch_.push_back(records::AggStackBytes{site.stack, saved ? saved_[i].bytes : site.live_bytes, blocks})) break;
  }
  std::sort(scratch_.begin(), scratch_.end(), [](const auto& a, const auto& b) { return a.stack < b.stack; });
  uint32_t n = 0;
  for (size_t i = 0; i < scratch_.size();) {
    records::AggStackBytes candidate = scratch_[i];
    for (++i; i < scratch_.size() && scratch_[i].stack == candidate.stack; ++i) {
      candidate.bytes += scratch_[i].bytes;
      candidate.blocks += scratch_[i].blocks;
    }
    if (n == kTopStacks && !ranks_before(candidate, out[n - 1])) continue;
    // Insertion into the sorted list (kTopStacks is small).
    uint32_t j = n < kTopStacks ? n++ : n - 1;
    while (j > 0 && ranks_before(candidate, out[j - 1])) {
      out[j] = out[j - 1];
      --j;
    }
    out[j] = candidate;
  }
  // A large one goes back: it is needed at stage ends, not held between them.
  if (scratch_.size() * sizeof(records::AggStackBytes) > kKeptScratchBytes) scratch_.release();
  return n;
}

void HeapAggregate::list_saved_level(Level& level) {
  if (level.where != PeakStacks::kSaved) return;
  level.top_count = top_stacks(true, level.top);
  level.where = PeakStacks::kListed;
}

void HeapAggregate::stage_begin(uint32_t instance) {
  if (!levels_) {
    levels_ = static_cast<Level*>(tracer_map(trace::kMaxStageDepth * sizeof(Level)));
    if (!levels_) return;
  }
  if (depth_ == trace::kMaxStageDepth) return;  // the tracer never records deeper
  if (instance >= stages_.size() && !stages_.resize(instance + 1)) return;
  make_copies_current();
  if (!stages_began_) {
    if (!saved_.resize(sites_.size())) return;
    stages_began_ = true;
  }
  // Changes are listed for the stage copy only while a stage is open.
  if (depth_ == 0) stage_copy_all_ = true;
  if (depth_ > 0 && levels_[depth_ - 1].where == PeakStacks::kSaved) saved_outer_level_ = static_cast<int>(depth_ - 1);
  Level& level = levels_[depth_++];
  level.instance = instance;
  level.where = PeakStacks::kNone;
  level.top_count = 0;
  level.peak_bytes = live_bytes_;
}

uint64_t HeapAggregate::retained_bytes(uint32_t instance) const {
  // Stages are numbered in the order they begin: the ones from `instance` on are it and
  // the stages inside it.
  int64_t retained = 0;
  for (size_t i = instance; i < stages_.size(); ++i) retained += stages_[i].live_self_bytes;
  return retained > 0 ? static_cast<uint64_t>(retained) : 0;
}

void HeapAggregate::write_stage(uint32_t instance, bool closed, const records::AggStackBytes* top, uint32_t count,
                                RecordSink& out) {
  records::AggStage record;
  record.stage = instance;
  record.closed = closed ? 1 : 0;
  record.frees = stages_[instance].frees;
  record.retained_bytes = retained_bytes(instance);
  record.top_stacks.items = {top, count};
  out.commit(records::encode(out.reserve(records::max_encoded_bytes(record)), record));
}

void HeapAggregate::stage_end(RecordSink& out) {
  if (depth_ == 0) return;
  make_copies_current();
  Level& level = levels_[depth_ - 1];
  list_saved_level(level);
  write_stage(level.instance, true, level.top, level.top_count, out);
  --depth_;
  if (depth_ == 0) return;
  // The parent is the innermost stage again: if its peak is in the stage copy, the copy
  // is its own again.
  if (saved_outer_level_ == static_cast<int>(depth_ - 1)) saved_outer_level_ = -1;
  Level& parent = levels_[depth_ - 1];
  if (level.peak_bytes > parent.peak_bytes) {
    parent.peak_bytes = level.peak_bytes;
    parent.where = level.where;
    parent.top_count = level.top_count;
    memcpy(parent.top, level.top, level.top_count * sizeof(level.top[0]));
  }
}

void HeapAggregate::before_record(RecordSink& out) {
  if (!heap_moved_) return;
  const records::AggHeap record{live_bytes_, interval_high_bytes_};
  out.commit(records::encode(out.reserve(records::max_encoded_bytes<records::AggHeap>()), record));
  interval_high_bytes_ = live_bytes_;
  heap_moved_ = false;
}

void HeapAggregate::ram_limit(RecordSink& out) {
  records::AggStackBytes listed[kTopStacks];
  records::AggRamLimitStacks record;
  record.stacks.items = {listed, top_stacks(false, listed)};
  out.commit(records::encode(out.reserve(records::max_encoded_bytes(record)), record));
}

void HeapAggregate::snapshot(uint64_t t_ns, RecordSink& out) {
  before_record(out);
  make_copies_current();
  changed_sites_.for_each(sites_.size(), [&](uint32_t place) {
    Site& site = sites_[place];
    if (!site.changed) return;
    site.changed = 0;
    write_site(site, out);
  });
  changed_sites_.clear();
  // The open stages as if they ended now, as the analysis ends them: an inner stage's
  // peak passes to the stage around it when higher (the levels themselves stay as they are).
  records::AggStackBytes carried[kTopStacks];
  uint32_t carried_count = 0;
  uint64_t carried_peak = 0;
  for (uint32_t i = depth_; i-- > 0;) {
    const Level& level = levels_[i];
    if (i + 1 == depth_ || level.peak_bytes >= carried_peak) {
      carried_peak = level.peak_bytes;
      if (level.where == PeakStacks::kSaved) {
        carried_count = top_stacks(true, carried);
      } else {
        carried_count = level.top_count;
        memcpy(carried, level.top, level.top_count * sizeof(level.top[0]));
      }
    }
    write_stage(level.instance, false, carried, carried_count, out);
  }
  write_run_peak(out);
  const records::AggSnapshot record{t_ns, allocations_, frees_, bytes_allocated_, temporary_allocations_};
  out.commit(records::encode(out.reserve(records::max_encoded_bytes<records::AggSnapshot>()), record));
}

// The run peak's sites that changed since written: a peak reached by allocating more
// writes the sites that grew, not every one holding memory (trace_format.h, kAggPeakSite).
// The reader applies them at the next kAggSnapshot, in order.
void HeapAggregate::write_run_peak(RecordSink& out) {
  if (run_peak_moved_) {
    peak_unwritten_sites_.for_each(sites_.size(), [&](uint32_t place) {
      Site& site = sites_[place];
      if (site.stack == kForgotten || !site.peak_unwritten) return;
      site.peak_unwritten = 0;
      const records::AggPeakSite record{site.stack, site.stage_plus_one, site.peak_bytes, site.peak_blocks};
      out.commit(records::encode(out.reserve(records::max_encoded_bytes<records::AggPeakSite>()), record));
    });
    peak_unwritten_sites_.clear();
    run_peak_moved_ = false;
  }
}

}  // namespace memstage::preload
