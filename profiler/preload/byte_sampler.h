// Sample mode's choice of which allocations to record: the points of a Poisson process
// over the bytes a thread allocates, one every `rate_bytes` on average (the scheme of
// tcmalloc's and heapprofd's samplers). A countdown of bytes drawn from an exponential
// distribution: each allocation smaller than the rate takes its size off; the one that
// takes it to zero or below holds a point and is sampled, and a new countdown is drawn.
// By the distribution's lack of memory, an allocation of s bytes is then sampled with
// probability 1 - exp(-s / rate_bytes) whatever came before it (trace/sampling.h unbiases
// by it). Allocations of rate_bytes or more are always sampled and leave the countdown
// alone. One per thread; no allocation, no lock: a subtraction and two compares a call.
#pragma once

#include <cmath>
#include <cstdint>

namespace memstage::preload {

class ByteSampler {
 public:
  // Zero-initialised state is valid: the first call draws the first countdown.
  void start(uint64_t rate_bytes, uint64_t seed) {
    rate_bytes_ = rate_bytes ? rate_bytes : 1;
    random_state_ = seed | 1;
    countdown_bytes_ = next_countdown();
  }
  bool started() const { return rate_bytes_ != 0; }

  // Whether the allocation of `size` bytes is sampled. Call start() first.
  bool sample(uint64_t size) {
    const bool picked = pick(size);
    if (picked) rearm();
    return picked;
  }

  // sample() in two: whether the allocation is sampled, and when it is, rearm() before the
  // next pick (so that a hot path can leave the draw, a call, out of its straight line).
  bool pick(uint64_t size) {
    if (__builtin_expect(size < rate_bytes_, 1)) {
      countdown_bytes_ -= static_cast<int64_t>(size);
      return countdown_bytes_ <= 0;
    }
    return true;  // leaves the countdown alone
  }
  void rearm() {
    if (countdown_bytes_ <= 0) countdown_bytes_ = next_countdown();
  }

 private:
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

  int64_t countdown_bytes_ = 0;
  uint64_t rate_bytes_ = 0;
  uint64_t random_state_ = 0;
};

}  // namespace memstage::preload
