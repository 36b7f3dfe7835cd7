// The four commands that read reports (gate, diff, compare, scale) fed the same report, with
// a stage path entered three times: each shows the same figure per stage path, the one
// files::read_figures' merge rule gives (highest peaks and fragmentation, leaks summed).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/compare/compare_model.h"
#include "harness/compare/diff_model.h"
#include "harness/compare/run_plan.h"
#include "harness/gate/gate.h"
#include "harness/scale/scale_report.h"

namespace {

using Json = nlohmann::json;

Json row(const std::string& path, double start_s, double end_s, double heap_bytes, double rss_bytes, double ratio,
         double leaked_bytes, double resident_bytes) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return {{"name", name},
          {"path", path},
          {"start_s", start_s},
          {"end_s", end_s},
          {"peak_heap_bytes", heap_bytes},
          {"peak_rss_bytes", rss_bytes},
          {"leaked_bytes", leaked_bytes},
          {"allocations", 10},
          {"bytes_allocated", 2 * heap_bytes},
          {"fragmentation", {{"ratio", ratio}, {"estimated", false}}},
          {"rss_breakdown",
           {{"live_bytes", heap_bytes / 2},
            {"allocator_in_use_bytes", heap_bytes},
            {"allocator_resident_bytes", resident_bytes},
            {"rss_bytes", rss_bytes},
            {"tracer_bytes", 64},
            {"estimated", false}}}};
}

// train/epoch three times: its highest heap in the second row, its highest RSS and
// fragmentation in the first, its last row neither (a "last row" rule would differ).
Json report_with_epochs() {
  Json stages = Json::array({row("load", 0, 1, 500, 4000, 0.10, 0, 800),
                             row("train/epoch", 1, 2, 1000, 9000, 0.40, 7, 3000),
                             row("train/epoch", 2, 3, 3000, 8000, 0.20, 11, 5000),
                             row("train/epoch", 3, 4.5, 2000, 7000, 0.05, 13, 2500)});
  Json totals = row("", 0, 4.5, 3000, 9000, 0.40, 31, 5000);
  totals.erase("name");
  totals.erase("path");
  return {{"schema", "memstage.report/1"}, {"mode", "full"}, {"allocator", "glibc"}, {"duration_s", 4.5},
          {"totals", totals},          {"stages", stages}};
}

struct Expected {
  double heap_bytes, rss_bytes, ratio, leaked_bytes, duration_s;
};
const Expected kEpoch = {3000, 9000, 0.40, 31, 3.5};
const Expected kLoad = {500, 4000, 0.10, 0, 1};

double gate_figure(const Json& report, const std::string& path, const std::string& metric) {
  const std::string budget = R"({"stages": {")" + path + R"(": {")" + metric + R"(": )" +
                             (metric == "fragmentation" ? "1" : "\"1TiB\"") + "}}}";
  const auto checks = memstage::gate::check_budget(report, memstage::gate::parse_budget(budget, "budget.json"));
  REQUIRE(checks.size() == 1);
  REQUIRE_FALSE(checks[0].missing);
  REQUIRE_FALSE(checks[0].unmeasured);
  return checks[0].measured;
}

double diff_figure(const Json& report, const std::string& path, const std::string& name) {
  const auto diff = memstage::compare::build_diff(report, report, "A", "B");
  const auto r = std::find_if(diff.rows.begin(), diff.rows.end(), [&](const auto& d) { return d.path == path; });
  REQUIRE(r != diff.rows.end());
  const auto m = std::find_if(r->metrics.begin(), r->metrics.end(), [&](const auto& d) { return d.name == name; });
  REQUIRE(m != r->metrics.end());
  REQUIRE(m->a);
  CHECK(*m->delta == 0);
  return *m->a;
}

// compare's result on the report as its full run and its one stats run.
memstage::compare::CompareResult compare_of(const Json& report) {
  using namespace memstage::compare;
  const std::vector<Subject> subjects = {{"a", {"x"}, {}}};
  std::vector<RunRecord> runs;
  for (const PlannedRun& planned : plan_runs(subjects, 1)) {
    RunRecord run;
    run.planned = planned;
    run.report = report;
    runs.push_back(run);
  }
  return build_compare(subjects, runs, 1);
}

const memstage::scale::Series& scale_series(const memstage::scale::ScaleInput& input, const std::string& path) {
  const auto s = std::find_if(input.stages.begin(), input.stages.end(), [&](const auto& x) { return x.path == path; });
  REQUIRE(s != input.stages.end());
  return *s;
}

}  // namespace

TEST_CASE("gate, diff, compare and scale give one figure per stage path", "[agree]") {
  const Json report = report_with_epochs();
  const auto compared = compare_of(report);
  REQUIRE(compared.stage_paths == std::vector<std::string>{"load", "train/epoch"});
  memstage::scale::ScaleInput scaled;
  memstage::scale::add_points(scaled, 100, memstage::files::read_figures(report, "report.json"));
  REQUIRE(scaled.stages.size() == 2);
  for (const auto& [path, want] : {std::pair{std::string("train/epoch"), kEpoch}, std::pair{std::string("load"), kLoad}}) {
    INFO(path);
    const auto* stage = compared.subjects.at(0).stage(path);
    REQUIRE(stage);
    REQUIRE(stage->memory);
    const auto& point = scale_series(scaled, path).points.at(0);

    CHECK(gate_figure(report, path, "peak_heap") == want.heap_bytes);
    CHECK(diff_figure(report, path, "peak_heap_bytes") == want.heap_bytes);
    CHECK(stage->memory->peak_heap_bytes == want.heap_bytes);
    CHECK(point.peak_heap_bytes == want.heap_bytes);

    CHECK(gate_figure(report, path, "peak_rss") == want.rss_bytes);
    CHECK(diff_figure(report, path, "peak_rss_bytes") == want.rss_bytes);
    CHECK(stage->memory->peak_rss_bytes == want.rss_bytes);
    CHECK(stage->peak_rss_bytes.median == want.rss_bytes);  // from the stats run
    CHECK(point.peak_rss_bytes == want.rss_bytes);

    CHECK(gate_figure(report, path, "fragmentation") == Approx(want.ratio));
    CHECK(diff_figure(report, path, "fragmentation") == Approx(want.ratio));
    CHECK(stage->memory->fragmentation_ratio == Approx(want.ratio));

    CHECK(gate_figure(report, path, "leaked") == want.leaked_bytes);
    CHECK(diff_figure(report, path, "leaked_bytes") == want.leaked_bytes);
    CHECK(stage->memory->leaked_bytes == want.leaked_bytes);

    CHECK(diff_figure(report, path, "duration_s") == Approx(want.duration_s));
    CHECK(stage->wall_time_s.median == Approx(want.duration_s));
  }
}

TEST_CASE("compare's breakdown of a repeated path: each step its highest, still in order", "[agree]") {
  const auto compared = compare_of(report_with_epochs());
  const auto& memory = *compared.subjects.at(0).stage("train/epoch")->memory;
  CHECK(memory.live_bytes == 1500);
  CHECK(memory.allocator_in_use_bytes == 3000);
  CHECK(memory.allocator_resident_bytes == 5000);
  CHECK(memory.rss_bytes == 9000);
  CHECK(memory.live_bytes <= memory.allocator_in_use_bytes);
  CHECK(memory.allocator_in_use_bytes <= memory.allocator_resident_bytes);
  CHECK(memory.allocator_resident_bytes <= memory.rss_bytes);
  CHECK_FALSE(memory.breakdown_estimated);
  CHECK(diff_figure(report_with_epochs(), "train/epoch", "allocator_resident_bytes") == 5000);
}
