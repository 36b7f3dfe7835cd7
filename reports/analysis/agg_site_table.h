// Aggregate mode's sites in pass one (first_pass.h): each site's live figures and the
// counts its records added up, by (stack, stage). Stack ids are dense (the tree's), and a
// stack is mostly one site: a stack's first site goes in a table by stack, in mapped blocks
// that never move (a hash table of every site doubled its way up, each byte of it fresh memory
// and every entry moved at each doubling); a stack's other sites, and stacks the tree does
// not hold (a damaged trace), go in a hash table beside it.
#pragma once

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

class AggSiteTable {
 public:
  AggSiteTable() = default;
  AggSiteTable(const AggSiteTable&) = delete;
  AggSiteTable& operator=(const AggSiteTable&) = delete;
  ~AggSiteTable() { clear(); }

  // The site (stack, stage), made if new. `tree_stacks`: the stack tree's stacks so far
  // (the table by stack holds none past them).
  AggSite& at(uint32_t stack, int32_t stage, size_t tree_stacks) {
    const uint32_t stage_plus_two = static_cast<uint32_t>(stage) + 2;
    const bool by_stack = stage_plus_two != kNoSite;  // a damaged trace's stage -2 goes beside
    if (by_stack && stack < stacks_mapped() && entry(stack).stage_plus_two == stage_plus_two) return entry(stack).site;
    if (!others_.empty()) {
      const auto it = others_.find(figure_key(stack, stage));
      if (it != others_.end()) return it->second;
    }
    ++size_;
    if (by_stack && stack < tree_stacks && map_through(stack) && entry(stack).stage_plus_two == kNoSite) {
      entry(stack).stage_plus_two = stage_plus_two;
      return entry(stack).site;
    }
    return others_[figure_key(stack, stage)];
  }
  // Starts fetching the site's entry, for at() soon (a cache miss in a table of megabytes).
  void prefetch(uint32_t stack, int32_t stage) const {
    if (stack < stacks_mapped()) __builtin_prefetch(&entry(stack));
    if (!others_.empty()) others_.prefetch(figure_key(stack, stage));
  }
  // Every site, as visit(figure_key, site): those in the table by stack in stack order.
  template <class Visit>
  void for_each(Visit visit) const {
    for (size_t block = 0; block < blocks_.size(); ++block) visit_block(block, visit);
    for (const auto& [key, site] : others_) visit(key, site);
  }
  // Every site as for_each() gives them, each block of the table by stack given back once
  // visited: what the visits make is held beside one block, not the whole table. Empties it.
  template <class Visit>
  void take_each(Visit visit) {
    for (size_t block = 0; block < blocks_.size(); ++block) {
      visit_block(block, visit);
      munmap(blocks_[block], kBlockBytes);
      blocks_[block] = nullptr;
    }
    blocks_.clear();
    for (const auto& [key, site] : others_) visit(key, site);
    clear();
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Gives its memory back to the system (mapped, not the allocator's).
  void clear() {
    for (ByStack* block : blocks_) munmap(block, kBlockBytes);
    blocks_.clear();
    others_.clear();
    size_ = 0;
  }

 private:
  static constexpr uint32_t kNoSite = 0;  // stage_plus_two of a stack with no site in the table
  struct ByStack {
    AggSite site;
    uint32_t stage_plus_two;
  };
  // Blocks mapped whole, their pages zero until a site is written: a stack without one
  // costs nothing but its share of a touched page.
  static constexpr size_t kBlockStacks = 65536;
  static constexpr size_t kBlockBytes = kBlockStacks * sizeof(ByStack);
  template <class Visit>
  void visit_block(size_t block, Visit& visit) const {
    for (size_t stack = block * kBlockStacks; stack < (block + 1) * kBlockStacks; ++stack) {
      const ByStack& s = entry(stack);
      if (s.stage_plus_two != kNoSite) {
        visit(figure_key(static_cast<uint32_t>(stack), static_cast<int32_t>(s.stage_plus_two - 2)), s.site);
      }
    }
  }
  size_t stacks_mapped() const { return blocks_.size() * kBlockStacks; }
  ByStack& entry(size_t stack) { return blocks_[stack / kBlockStacks][stack % kBlockStacks]; }
  const ByStack& entry(size_t stack) const { return blocks_[stack / kBlockStacks][stack % kBlockStacks]; }
  // False when out of memory (the site goes in the hash table).
  bool map_through(uint32_t stack) {
    while (stack >= stacks_mapped()) {
      void* block = mmap(nullptr, kBlockBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (block == MAP_FAILED) return false;
      blocks_.push_back(static_cast<ByStack*>(block));
    }
    return true;
  }

  std::vector<ByStack*> blocks_;
  absl::flat_hash_map<uint64_t, AggSite> others_;  // by figure_key
  size_t size_ = 0;
};

}  // namespace memstage::reports
