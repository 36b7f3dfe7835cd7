// An RSS breakdown says what of the resident pages other processes share, from the
// smaps_rollup sample nearest its moment.
#include <catch2/catch.hpp>

#include "reports/analysis/resident_shares.h"

using memstage::reports::resident_shares_at;
using memstage::trace::MemorySharesRecord;

namespace {

MemorySharesRecord sample(uint64_t t_ms, uint64_t shared_mib, uint64_t private_mib) {
  MemorySharesRecord r;
  r.t_ns = t_ms * 1'000'000;
  r.shared_bytes = shared_mib << 20;
  r.private_bytes = private_mib << 20;
  r.pss_bytes = (private_mib << 20) + (shared_mib << 20) / 4;
  return r;
}

}  // namespace

TEST_CASE("an RSS breakdown's shares come from the smaps sample nearest its moment") {
  const std::vector<MemorySharesRecord> samples = {sample(100, 2, 10), sample(300, 40, 12), sample(700, 41, 50)};
  SECTION("none without samples") { CHECK_FALSE(resident_shares_at({}, 0.2).has_value()); }
  SECTION("before the first, after the last") {
    CHECK(resident_shares_at(samples, 0.0)->t_s == Approx(0.1));
    CHECK(resident_shares_at(samples, 5.0)->t_s == Approx(0.7));
  }
  SECTION("the nearer of the two around the moment, the earlier when as near") {
    const auto at = resident_shares_at(samples, 0.29);
    REQUIRE(at.has_value());
    CHECK(at->t_s == Approx(0.3));
    CHECK(at->shared_bytes == 40ull << 20);
    CHECK(at->private_bytes == 12ull << 20);
    CHECK(at->pss_bytes == (12ull << 20) + (10ull << 20));
    CHECK(resident_shares_at(samples, 0.19)->t_s == Approx(0.1));
    CHECK(resident_shares_at(samples, 0.5)->t_s == Approx(0.3));
    CHECK(resident_shares_at(samples, 0.3)->t_s == Approx(0.3));
  }
}
