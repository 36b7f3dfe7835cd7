// Fills Report::frames without duplicates: a frame equal to one already there gets that
// one's index. The frames of a Stack are indices into Report::frames.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "reports/model/report_model.h"

namespace memstage::reports {

class FrameInterner {
 public:
  // Indexes what `frames` holds already (assumed distinct) and adds to it from then on.
  explicit FrameInterner(std::vector<Frame>& frames)
      : frames_(&frames), ids_(frames.size() + 16, Hash{&frames_}, Equal{&frames_}) {
    for (FrameIndex i = 0; i < frames.size(); ++i) ids_.insert(i);
  }
  FrameInterner(const FrameInterner&) = delete;
  FrameInterner& operator=(const FrameInterner&) = delete;

  // No more frames will come: the index of those there goes (a frame interned after it
  // would not be matched with them).
  void forget() { decltype(ids_)(0, Hash{&frames_}, Equal{&frames_}).swap(ids_); }

  // Goes on in `frames`, which holds what the list interned into so far did (swapped in):
  // a resolver begun before its report was made hands its frames to it.
  void move_to(std::vector<Frame>& frames) { frames_ = &frames; }

  FrameIndex intern(Frame frame) {
    // The set holds indices, so the candidate goes in first and comes out again if an
    // equal frame was there.
    const auto index = static_cast<FrameIndex>(frames_->size());
    frames_->push_back(std::move(frame));
    const auto [it, added] = ids_.insert(index);
    if (!added) frames_->pop_back();
    return *it;
  }

 private:
  // The hash and the comparison read the list through frames_, so that move_to moves them.
  struct Hash {
    std::vector<Frame>* const* frames;
    size_t operator()(FrameIndex i) const {
      const Frame& f = (**frames)[i];
      size_t h = std::hash<std::string>{}(f.function);
      const auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
      mix(std::hash<std::string>{}(f.file));
      mix(std::hash<int>{}(f.line));
      mix(std::hash<std::string>{}(f.module));
      mix(std::hash<uint64_t>{}(f.address));
      mix(std::hash<uint64_t>{}(f.module_offset));
      mix((f.inlined ? 1u : 0u) | (f.allocator ? 2u : 0u));
      mix(std::hash<std::string>{}(f.kind));
      return h;
    }
  };
  struct Equal {
    std::vector<Frame>* const* frames;
    bool operator()(FrameIndex a, FrameIndex b) const { return (**frames)[a] == (**frames)[b]; }
  };

  std::vector<Frame>* frames_;
  std::unordered_set<FrameIndex, Hash, Equal> ids_;
};

}  // namespace memstage::reports
