// Sample mode's choice of which allocations to record: the points of a Poisson process
// over the bytes a thread allocates, one every `rate_bytes` on average (the scheme of
// tcmalloc's and heapprofd's samplers). A countdown of bytes drawn from an exponential
// distribution: each allocation smaller than the rate takes its size off; the one that
// takes it to zero or below holds a point and is sampled, and a new countdown is drawn.
// By the distribution's lack of memory, an allocation of s bytes is then sampled with
// probability 1 - exp(-s / rate_bytes) whatever came before it (trace/sampling.h unbiases
// by it). Allocations of rate_bytes or more are always sampled and leave the countdown
// alone. One per thread; no allocation, no lock: a subtraction and two compares a call.
//
// The countdown may be cut into stretches that end at checkpoints (settle's
// `checkpoint_bytes`): the tracer's chance to write what it holds, on the same compare,
// where no thread of its own does it. The points, and so the samples, are the same.
#pragma once

#include <cmath>
#include <cstdint>

namespace memstage::preload {

class ByteSampler {
 public:
  // Zero-initialised state is valid: pick() and settle() say true for every size until
  // start() draws the first countdown.
  // `checkpoint_bytes`: as settle's.
  void start(uint64_t rate_bytes, uint64_t seed, int64_t checkpoint_bytes = 0) {
    rate_bytes_ = rate_bytes ? rate_bytes : 1;
    random_state_ = seed | 1;
    begin_stretch(next_countdown(), checkpoint_bytes);
  }
  bool started() const { return rate_bytes_ != 0; }

  // Whether the allocation of `size` bytes is sampled. Call start() first.
  bool sample(uint64_t size, int64_t checkpoint_bytes = 0) { return pick(size) && settle(size, checkpoint_bytes); }

  // sample() in two, so that a hot path can leave all but a compare out of its straight
  // line: pick() says whether the allocation may be sampled (it is, or the stretch of the
  // countdown ended at a checkpoint); then settle() says whether it is, and begins the
  // next stretch, `checkpoint_bytes` long at most (0: up to the next point).
  bool pick(uint64_t size) {
    if (__builtin_expect(size < rate_bytes_, 1)) {
      countdown_bytes_ -= static_cast<int64_t>(size);
      return countdown_bytes_ <= 0;
    }
    return true;  // leaves the countdown alone
  }
  bool settle(uint64_t size, int64_t checkpoint_bytes) {
    if (size >= rate_bytes_) return true;
    const int64_t left_bytes = countdown_bytes_ + deferred_bytes_;
    const bool sampled = left_bytes <= 0;
    begin_stretch(sampled ? next_countdown() : left_bytes, checkpoint_bytes);
    return sampled;
  }

 private:
  void begin_stretch(int64_t to_point_bytes, int64_t checkpoint_bytes) {
    countdown_bytes_ = checkpoint_bytes > 0 && checkpoint_bytes < to_point_bytes ? checkpoint_bytes : to_point_bytes;
    deferred_bytes_ = to_point_bytes - countdown_bytes_;
  }
  // xorshift64*: fast, and plenty for the spacing of samples.
  uint64_t next_random() {
    random_state_ ^= random_state_ >> 12;
    random_state_ ^= random_state_ << 25;
    random_state_ ^= random_state_ >> 27;
    return random_state_ * 0x2545f4914f6cdd1dull;
  }
  // Exponential with mean rate_bytes_, at least 1. Out of line: once a sample.
  __attribute__((noinline, cold)) int64_t next_countdown() {
    // Uniform in (0, 1]: the top 53 bits, plus one so that log never sees 0.
    const double u = static_cast<double>((next_random() >> 11) + 1) * 0x1.0p-53;
    const double bytes = -std::log(u) * static_cast<double>(rate_bytes_);
    return bytes < 1 ? 1 : static_cast<int64_t>(bytes);
  }

  int64_t countdown_bytes_ = 0;  // to the stretch's end
  int64_t deferred_bytes_ = 0;   // from there to the next point
  uint64_t rate_bytes_ = 0;
  uint64_t random_state_ = 0;
};

}  // namespace memstage::preload
