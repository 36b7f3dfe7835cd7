// What a sampled allocation stands for (trace_format.h, kSampling): the sampler records an
// allocation of s bytes with probability p(s) = 1 - exp(-s / rate), and always when
// s >= rate. Weighting each sample by 1 / p(s) makes the sums of bytes and of blocks
// unbiased estimates of the true sums (Horvitz-Thompson), per stack, stage or leak site.
#pragma once

#include <cmath>
#include <cstdint>

namespace memstage::trace {

// The probability that an allocation of `size` bytes is sampled at `rate_bytes`.
inline double sample_probability(uint64_t size, uint64_t rate_bytes) {
  if (rate_bytes == 0 || size >= rate_bytes) return 1.0;
  return -std::expm1(-static_cast<double>(size) / static_cast<double>(rate_bytes));
}

// How many allocations one sample of `size` bytes stands for.
inline double blocks_per_sample(uint64_t size, uint64_t rate_bytes) {
  const double p = sample_probability(size, rate_bytes);
  return p > 0 ? 1.0 / p : 0.0;
}

// How many bytes one sample of `size` bytes stands for: size / p(size), about rate_bytes
// for small allocations, the size itself from rate_bytes up.
inline double bytes_per_sample(uint64_t size, uint64_t rate_bytes) {
  return static_cast<double>(size) * blocks_per_sample(size, rate_bytes);
}

// The relative standard error of an estimate of `bytes` made of small samples: about
// bytes / rate samples, each weighing ~rate, Poisson-counted: 1 / sqrt(bytes / rate).
// Allocations of rate_bytes or more add no error (they are all recorded).
inline double relative_standard_error(double bytes, uint64_t rate_bytes) {
  if (bytes <= 0) return 0;
  return std::sqrt(static_cast<double>(rate_bytes) / bytes);
}

}  // namespace memstage::trace
