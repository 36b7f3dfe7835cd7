// StageLedger: the stage instances' retained bytes and highs, one way for the heap and
// device memory (reports/analysis/stage_ledger.h).
#include "reports/analysis/stage_ledger.h"

#include <catch2/catch.hpp>

using namespace memstage::reports;

namespace {

struct Figures {
  uint64_t peak_bytes = 0;
  uint64_t retained_bytes = 0;
  void absorb(const Figures& child) { peak_bytes = std::max(peak_bytes, child.peak_bytes); }
};

}  // namespace

TEST_CASE("stage ledger: a stage retains what it and the stages begun in it still hold", "[stages]") {
  StageLedger<Figures> ledger;
  ledger.add_instance(Figures{});  // 0: outer
  ledger.add_live(0, 100);
  ledger.add_instance(Figures{50, 0});  // 1: inner, inside 0
  ledger.add_live(1, 30);
  ledger.add_live(1, -10);
  ledger.add_live(-1, 1000);  // outside every stage: nobody's
  ledger.instances[1].peak_bytes = 500;
  CHECK(ledger.close_instance(1, 0).retained_bytes == 20);
  CHECK(ledger.instances[0].peak_bytes == 500);  // the child's high is its parent's
  ledger.add_live(0, -40);
  ledger.add_instance(Figures{});  // 2: a sibling after 1, inside 0
  ledger.add_live(1, -20);  // a block of the closed stage 1 freed
  CHECK(ledger.close_instance(2, 0).retained_bytes == 0);
  CHECK(ledger.close_instance(0, -1).retained_bytes == 60);
}

TEST_CASE("stage ledger: frees beyond what a stage allocated retain nothing, not less", "[stages]") {
  StageLedger<Figures> ledger;
  ledger.add_instance(Figures{});
  ledger.add_live(0, -64);
  CHECK(ledger.close_instance(0, -1).retained_bytes == 0);
}
