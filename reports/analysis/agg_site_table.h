// Aggregate mode's sites in pass one (first_pass.h): each site's live figures and the
// counts its records added up, by (stack, stage). A hash table of every site doubled its
// way up, each doubling fresh memory the kernel zeroed and every entry moved. Stack ids
// are dense (the tree's nodes; about a third of them are sites) and a stack is mostly one
// site: a stack's first site is found through a table by stack of 4-byte places in a list
// of sites in the order met, both in mapped blocks that never move; a stack's other sites,
// and stacks the tree does not hold (a damaged trace), go in a hash table beside them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <sys/mman.h>

#include <absl/container/flat_hash_map.h>

#include "reports/analysis/sites.h"

namespace memstage::reports {

struct AggSite {
  uint64_t live_bytes = 0;
  uint64_t live_blocks = 0;
  uint64_t bytes_allocated = 0;
  // In 4 bytes each: before either would wrap, the site's counts go to `sites`
  // (FirstPass::spill_counts), which adds them up with the rest.
  uint32_t allocations = 0, temporary_allocations = 0;
};

// An array in blocks of kItems mapped whole, zero until written, never moved; given back
// to the system (not an allocator that may keep it) when released.
template <class T, size_t kItems>
class MappedBlocks {
 public:
  MappedBlocks() = default;
  MappedBlocks(const MappedBlocks&) = delete;
  MappedBlocks& operator=(const MappedBlocks&) = delete;
  ~MappedBlocks() { release(); }

  size_t mapped() const { return blocks_.size() * kItems; }
  T& operator[](size_t i) { return blocks_[i / kItems][i % kItems]; }
  const T& operator[](size_t i) const { return blocks_[i / kItems][i % kItems]; }
  // Maps blocks until item i is in one; false when out of memory.
  bool map_through(size_t i) {
    while (i >= mapped()) {
      void* block = mmap(nullptr, kBlockBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (block == MAP_FAILED) return false;
      // In huge pages where the system gives them on request: a fresh 4 KiB page is a
      // fault each, which costs far more than its zeroing on virtual machines.
      madvise(block, kBlockBytes, MADV_HUGEPAGE);
      blocks_.push_back(static_cast<T*>(block));
    }
    return true;
  }
  size_t blocks() const { return blocks_.size(); }
  void release_block(size_t block) {
    if (blocks_[block]) munmap(blocks_[block], kBlockBytes);
    blocks_[block] = nullptr;
  }
  void release() {
    for (size_t block = 0; block < blocks_.size(); ++block) release_block(block);
    blocks_.clear();
  }

 private:
  static constexpr size_t kBlockBytes = kItems * sizeof(T);
  std::vector<T*> blocks_;
};

class AggSiteTable {
 public:
  // The site (stack, stage), made if new. `tree_stacks`: the stack tree's stacks so far
  // (the table by stack holds none past them).
  AggSite& at(uint32_t stack, int32_t stage, size_t tree_stacks) {
    if (stack < place_by_stack_.mapped() && place_by_stack_[stack]) {
      Listed& listed = listed_[place_by_stack_[stack] - 1];
      if (listed.stage == stage) return listed.site;
    }
    if (!others_.empty()) {
      const auto it = others_.find(figure_key(stack, stage));
      if (it != others_.end()) return it->second;
    }
    ++size_;
    if (stack < tree_stacks && place_by_stack_.map_through(stack) && !place_by_stack_[stack] &&
        listed_count_ < UINT32_MAX && listed_.map_through(listed_count_)) {
      Listed& listed = listed_[listed_count_++];
      listed.stack = stack;
      listed.stage = stage;
      place_by_stack_[stack] = listed_count_;
      return listed.site;
    }
    return others_[figure_key(stack, stage)];
  }
  // Starts fetching where the stack's place is, for prefetch() soon.
  void prefetch_place(uint32_t stack) const {
    if (stack < place_by_stack_.mapped()) __builtin_prefetch(&place_by_stack_[stack]);
  }
  // Starts fetching the site's entry, for at() soon (a cache miss in a table of megabytes).
  void prefetch(uint32_t stack, int32_t stage) const {
    if (stack < place_by_stack_.mapped() && place_by_stack_[stack]) __builtin_prefetch(&listed_[place_by_stack_[stack] - 1]);
    if (!others_.empty()) others_.prefetch(figure_key(stack, stage));
  }
  // Every site, as visit(figure_key, site).
  template <class Visit>
  void for_each(Visit visit) const {
    for (uint32_t i = 0; i < listed_count_; ++i) visit(figure_key(listed_[i].stack, listed_[i].stage), listed_[i].site);
    for (const auto& [key, site] : others_) visit(key, site);
  }
  // The same, each block of the list given back once visited: what the visits make is held
  // beside one block, not the whole table. Empties it.
  template <class Visit>
  void take_each(Visit visit) {
    place_by_stack_.release();
    for (size_t block = 0; block < listed_.blocks(); ++block) {
      const size_t end = std::min<size_t>(listed_count_, (block + 1) * kListedBlock);
      for (size_t i = block * kListedBlock; i < end; ++i) visit(figure_key(listed_[i].stack, listed_[i].stage), listed_[i].site);
      listed_.release_block(block);
    }
    for (const auto& [key, site] : others_) visit(key, site);
    clear();
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    place_by_stack_.release();
    listed_.release();
    listed_count_ = 0;
    others_ = {};
    size_ = 0;
  }

 private:
  struct Listed {
    AggSite site;
    uint32_t stack;
    int32_t stage;
  };
  static constexpr size_t kListedBlock = 65536;
  MappedBlocks<uint32_t, 1u << 20> place_by_stack_;  // place in listed_ + 1; 0: none
  MappedBlocks<Listed, kListedBlock> listed_;
  uint32_t listed_count_ = 0;
  absl::flat_hash_map<uint64_t, AggSite> others_;  // by figure_key
  size_t size_ = 0;
};

}  // namespace memstage::reports
