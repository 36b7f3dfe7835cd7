#include "reports/analysis/resident_shares.h"

#include <algorithm>

namespace memstage::reports {

std::optional<ResidentShares> resident_shares_at(const std::vector<trace::MemorySharesRecord>& samples, double t_s) {
  if (samples.empty()) return std::nullopt;
  const double t_ns = t_s * trace::kNsPerS;
  // The first sample after the moment, and the one before it.
  auto after = std::upper_bound(samples.begin(), samples.end(), t_ns,
                                [](double t, const trace::MemorySharesRecord& s) { return t < static_cast<double>(s.t_ns); });
  auto nearest = after;
  if (after == samples.end() ||
      (after != samples.begin() && t_ns - static_cast<double>((after - 1)->t_ns) <= static_cast<double>(after->t_ns) - t_ns)) {
    nearest = after - 1;
  }
  const trace::MemorySharesRecord& s = *nearest;
  return ResidentShares{s.shared_bytes, s.private_bytes, s.pss_bytes, static_cast<double>(s.t_ns) / trace::kNsPerS};
}

}  // namespace memstage::reports
