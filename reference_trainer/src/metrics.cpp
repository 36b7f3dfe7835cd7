#include "trainer/metrics.h"

namespace trainer {

std::uint64_t Confusion::total() const {
  std::uint64_t sum = 0;
  for (std::uint64_t c : counts_) sum += c;
  return sum;
}

double Confusion::accuracy() const {
  const std::uint64_t n = total();
  if (n == 0) return 0.0;
  std::uint64_t right = 0;
  for (std::size_t c = 0; c < classes_; ++c) right += counts_[c * classes_ + c];
  return static_cast<double>(right) / static_cast<double>(n);
}

double Confusion::macro_f1() const {
  double sum = 0.0;
  std::size_t present = 0;
  for (std::size_t c = 0; c < classes_; ++c) {
    std::uint64_t as_truth = 0;
    std::uint64_t as_prediction = 0;
    for (std::size_t other = 0; other < classes_; ++other) {
      as_truth += counts_[c * classes_ + other];
      as_prediction += counts_[other * classes_ + c];
    }
    if (as_truth == 0 && as_prediction == 0) continue;
    ++present;
    const double hits = static_cast<double>(counts_[c * classes_ + c]);
    sum += 2.0 * hits / static_cast<double>(as_truth + as_prediction);
  }
  return present == 0 ? 0.0 : sum / static_cast<double>(present);
}

std::uint32_t argmax(const float* values, std::size_t count) {
  std::uint32_t best = 0;
  for (std::size_t i = 1; i < count; ++i) {
    if (values[i] > values[best]) best = static_cast<std::uint32_t>(i);
  }
  return best;
}

}  // namespace trainer
