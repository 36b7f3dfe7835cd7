// Units of harness/gate: budget parsing, budget and baseline checks, and the JUnit /
// GitHub renderings, on small hand-written reports shaped like report.json.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <algorithm>

#include "harness/gate/gate.h"

using namespace memstage::gate;
using Json = nlohmann::json;

namespace {

constexpr double kMiB = 1024.0 * 1024;

Json stage(const std::string& name, const std::string& path, double peak_heap_bytes, double leaked_bytes = 0,
           double fragmentation_ratio = 0.1) {
  return Json{{"name", name},
              {"path", path},
              {"peak_heap_bytes", peak_heap_bytes},
              {"peak_rss_bytes", peak_heap_bytes * 2},
              {"leaked_bytes", leaked_bytes},
              {"fragmentation", {{"ratio", fragmentation_ratio}, {"estimated", false}}}};
}

// A run: load (100 MiB), vectorize (600 MiB), train with two epochs (the second one worse).
Json sample_report(double scale = 1.0) {
  return Json{{"schema", "memstage.report/1"},
              {"totals",
               {{"peak_heap_bytes", 700 * kMiB * scale},
                {"peak_rss_bytes", 900 * kMiB * scale},
                {"leaked_bytes", 4096 * scale},
                {"leaked_blocks", 2},
                {"fragmentation", {{"ratio", 0.2}, {"estimated", false}}}}},
              {"stages", Json::array({stage("load", "load", 100 * kMiB * scale),
                                      stage("vectorize", "vectorize", 600 * kMiB * scale),
                                      stage("train", "train", 300 * kMiB * scale),
                                      stage("epoch", "train/epoch", 200 * kMiB * scale, 1000, 0.1),
                                      stage("epoch", "train/epoch", 250 * kMiB * scale, 3000, 0.35)})}};
}

std::string error_of(const std::string& budget_text) {
  try {
    parse_budget(budget_text, "budget.json");
  } catch (const GateError& e) {
    return e.what();
  }
  return "(no error)";
}

const Check& find_check(const std::vector<Check>& checks, const std::string& id) {
  const auto it = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.id == id; });
  REQUIRE(it != checks.end());
  return *it;
}

}  // namespace

TEST_CASE("a budget parses sizes, plain bytes and ratios") {
  const Budget budget = parse_budget(R"({
    "totals": { "peak_rss": "2GiB", "peak_heap": "1.5GiB", "leaked": "0" },
    "stages": { "vectorize": { "peak_heap": "512MiB", "leaked": 4096 },
                "train/epoch": { "fragmentation": "30%" }, "load": { "fragmentation": 0.5 } } })",
                                     "budget.json");
  REQUIRE(budget.totals.size() == 3);
  CHECK(budget.totals[0].metric == Metric::kPeakRss);
  CHECK(budget.totals[0].value == 2 * 1024 * kMiB);
  CHECK(budget.totals[1].value == 1.5 * 1024 * kMiB);
  CHECK(budget.totals[2].value == 0);
  REQUIRE(budget.stages.size() == 3);
  CHECK(budget.stages[0].key == "vectorize");
  CHECK(budget.stages[0].limits[0].value == 512 * kMiB);
  CHECK(budget.stages[0].limits[1].value == 4096);
  CHECK(budget.stages[1].limits[0].value == Approx(0.30));
  CHECK(budget.stages[2].limits[0].value == Approx(0.5));
}

TEST_CASE("malformed budgets are rejected naming the field") {
  CHECK(error_of(R"({"totals": {"peak_rs": "2GiB"}})") ==
        "budget.json: unknown field \"totals.peak_rs\" (expected peak_heap, peak_rss, leaked, fragmentation, "
        "peak_device, and for stages peak_heap_increase, peak_rss_increase, retained)");
  CHECK(error_of(R"({"stages": {"load": {"peak_hep": 1}}})") ==
        "budget.json: unknown field \"stages.load.peak_hep\" (expected peak_heap, peak_rss, leaked, fragmentation, "
        "peak_device, and for stages peak_heap_increase, peak_rss_increase, retained)");
  CHECK(error_of(R"({"total": {}})") == "budget.json: unknown field \"total\" (expected totals, stages)");
  CHECK_THAT(error_of(R"({"totals": {"peak_rss": "2 gigs"}})"),
             Catch::Contains("\"totals.peak_rss\": \"2 gigs\" is not a size"));
  CHECK_THAT(error_of(R"({"totals": {"leaked": -1}})"), Catch::Contains("\"totals.leaked\": -1 is not a size"));
  CHECK_THAT(error_of(R"({"totals": {"fragmentation": 30}})"),
             Catch::Contains("\"totals.fragmentation\": 30 is not a ratio"));
  CHECK_THAT(error_of(R"({"totals": {"fragmentation": "130%"}})"), Catch::Contains("is not a ratio"));
  CHECK_THAT(error_of(R"({"stages": {"load": "1GiB"}})"), Catch::Contains("\"stages.load\" must be an object"));
  // Invalid JSON: the parser's position, without nlohmann's exception-id prefix.
  CHECK_THAT(error_of("{\"totals\": {\"peak_rss\": \"2GiB\",}}"),
             Catch::StartsWith("budget.json: invalid JSON: parse error at line 1, column"));
  // Notes for humans are allowed.
  CHECK(error_of(R"({"_comment": "why these limits", "totals": {}})") == "(no error)");
}

TEST_CASE("out-of-range, negative, not-a-number and repeated budget values name their field") {
  // A number no double holds stops the JSON parser itself; the field is still named.
  CHECK(error_of(R"({"totals": {"peak_heap": 1e400}})") ==
        "budget.json: \"totals.peak_heap\": number overflow parsing '1e400'");
  CHECK(error_of(R"({"stages": {"load": {"fragmentation": -1e999}}})") ==
        "budget.json: \"stages.load.fragmentation\": number overflow parsing '-1e999'");
  CHECK_THAT(error_of(R"({"totals": {"peak_rss": "1e400GiB"}})"),
             Catch::Contains("\"totals.peak_rss\": \"1e400GiB\" is not a size"));
  CHECK_THAT(error_of(R"({"totals": {"peak_rss": 1.9e19}})"),
             Catch::Contains("\"totals.peak_rss\": 1.9e+19 is not a size"));
  CHECK_THAT(error_of(R"({"totals": {"peak_heap": -2.5}})"), Catch::Contains("\"totals.peak_heap\": -2.5 is not a size"));
  CHECK_THAT(error_of(R"({"totals": {"peak_heap": "-1MiB"}})"), Catch::Contains("is not a size"));
  CHECK_THAT(error_of(R"({"totals": {"fragmentation": -0.1}})"), Catch::Contains("\"totals.fragmentation\": -0.1 is not a ratio"));
  CHECK_THAT(error_of(R"({"totals": {"fragmentation": "NaN"}})"),
             Catch::Contains("\"totals.fragmentation\": \"NaN\" is not a ratio"));
  CHECK_THAT(error_of(R"({"totals": {"peak_heap": "nan"}})"), Catch::Contains("\"totals.peak_heap\": \"nan\" is not a size"));
  CHECK_THAT(error_of(R"({"totals": {"fragmentation": "inf%"}})"), Catch::Contains("is not a ratio"));
  // JSON keeps the last of repeated keys without a word: a budget must not.
  CHECK(error_of(R"({"totals": {"peak_heap": "1GiB", "peak_heap": "2GiB"}})") ==
        "budget.json: \"totals.peak_heap\" is given twice");
  CHECK(error_of(R"({"stages": {"load": {}, "load": {"leaked": 0}}})") == "budget.json: \"stages.load\" is given twice");
  CHECK(error_of(R"({"totals": {}, "totals": {}})") == "budget.json: \"totals\" is given twice");
  // The same key in two objects is no repetition.
  CHECK(error_of(R"({"totals": {"leaked": 0}, "stages": {"load": {"leaked": 0}}})") == "(no error)");
}

TEST_CASE("parse_fraction reads percentages and fractions") {
  CHECK(parse_fraction("5%").value() == Approx(0.05));
  CHECK(parse_fraction("0.05").value() == Approx(0.05));
  CHECK(parse_fraction(" 12.5 % ").value() == Approx(0.125));
  CHECK_FALSE(parse_fraction("five"));
  CHECK_FALSE(parse_fraction("-5%"));
  CHECK_FALSE(parse_fraction("%"));
}

TEST_CASE("totals: under budget passes, over fails") {
  const Json report = sample_report();
  auto checks = check_budget(report, parse_budget(R"({"totals": {"peak_heap": "1GiB", "peak_rss": "1GiB"}})", "b"));
  REQUIRE(checks.size() == 2);
  CHECK(exit_code(checks) == 0);

  checks = check_budget(report, parse_budget(R"({"totals": {"peak_heap": "1GiB", "peak_rss": "800MiB",
                                                             "leaked": 0}})", "b"));
  CHECK(exit_code(checks) == 1);
  CHECK(find_check(checks, "totals.peak_heap").passed);
  const Check& rss = find_check(checks, "totals.peak_rss");
  CHECK_FALSE(rss.passed);
  CHECK(rss.measured_text == "900 MiB");
  CHECK(rss.limit_text == "800 MiB");
  CHECK(rss.message == "peak_rss of the whole run is 900 MiB, over the budget of 800 MiB");
  CHECK_FALSE(find_check(checks, "totals.leaked").passed);
}

TEST_CASE("a limit equal to the measured figure passes") {
  const auto checks = check_budget(sample_report(), parse_budget(R"({"totals": {"peak_heap": "700MiB"}})", "b"));
  CHECK(exit_code(checks) == 0);
}

TEST_CASE("stages: matched by path or unique name, worst occurrence counts") {
  const Json report = sample_report();
  auto checks = check_budget(report, parse_budget(R"({"stages": {
      "vectorize": {"peak_heap": "1GiB"},
      "train/epoch": {"peak_heap": "300MiB", "fragmentation": "40%", "leaked": 4000}}})", "b"));
  CHECK(exit_code(checks) == 0);
  // Two epochs: the higher peak (250 MiB), the higher fragmentation, leaks summed.
  CHECK(find_check(checks, "stages.train/epoch.peak_heap").measured == 250 * kMiB);
  CHECK(find_check(checks, "stages.train/epoch.fragmentation").measured == Approx(0.35));
  CHECK(find_check(checks, "stages.train/epoch.leaked").measured == 4000);

  // "epoch" is a name unique to one path: same stage; over on fragmentation.
  checks = check_budget(report, parse_budget(R"({"stages": {
      "vectorize": {"peak_heap": "512MiB"}, "epoch": {"fragmentation": "30%"}}})", "b"));
  CHECK(exit_code(checks) == 1);
  const Check& vectorize = find_check(checks, "stages.vectorize.peak_heap");
  CHECK_FALSE(vectorize.passed);
  CHECK(vectorize.message == "peak_heap of stage vectorize is 600 MiB, over the budget of 512 MiB");
  const Check& epoch = find_check(checks, "stages.epoch.fragmentation");
  CHECK_FALSE(epoch.passed);
  CHECK(epoch.limit_text == "30%");
  CHECK(epoch.measured_text == "35%");
}

TEST_CASE("a stage absent from the report is a failing check, not an error") {
  const auto checks = check_budget(sample_report(), parse_budget(R"({"totals": {"peak_heap": "1GiB"},
      "stages": {"tokenize": {"peak_heap": "1GiB", "leaked": "1MiB"}}})", "b"));
  REQUIRE(checks.size() == 3);
  CHECK(exit_code(checks) == 1);
  const Check& missing = find_check(checks, "stages.tokenize.peak_heap");
  CHECK(missing.missing);
  CHECK_FALSE(missing.passed);
  CHECK(missing.measured_text == "stage not in report");
  CHECK_THAT(render_table(checks), Catch::Contains("MISSING"));
}

TEST_CASE("a stage name on several paths must be written as a path") {
  Json report = sample_report();
  report["stages"].push_back(stage("epoch", "finetune/epoch", 10 * kMiB));
  try {
    check_budget(report, parse_budget(R"({"stages": {"epoch": {"peak_heap": "1GiB"}}})", "b"));
    FAIL("expected GateError");
  } catch (const GateError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ambiguous") && Catch::Contains("train/epoch, finetune/epoch"));
  }
  const auto checks = check_budget(report, parse_budget(R"({"stages": {"finetune/epoch": {"peak_heap": "1GiB"}}})", "b"));
  CHECK(exit_code(checks) == 0);
}

TEST_CASE("baseline: growth within the allowance passes, beyond it fails") {
  const Json old_report = sample_report();
  auto checks = check_baseline(sample_report(1.04), old_report, 0.05);
  // totals + 4 stage paths (train/epoch once), 3 metrics each.
  CHECK(checks.size() == 15);
  CHECK(exit_code(checks) == 0);

  checks = check_baseline(sample_report(1.10), old_report, 0.05);
  CHECK(exit_code(checks) == 1);
  const Check& heap = find_check(checks, "baseline.totals.peak_heap");
  CHECK_FALSE(heap.passed);
  CHECK(heap.limit_text == "+5% of 700 MiB");
  CHECK(heap.measured_text == "770 MiB (+10.0%)");
  CHECK_FALSE(find_check(checks, "baseline.stages.train/epoch.peak_rss").passed);

  // Shrinking passes; a stage new in this report has nothing to compare with.
  Json smaller = sample_report(0.5);
  smaller["stages"].push_back(stage("evaluate", "evaluate", 1000 * kMiB));
  checks = check_baseline(smaller, old_report, 0.0);
  CHECK(exit_code(checks) == 0);
  CHECK(checks.size() == 15);
}

TEST_CASE("baseline: a leak where there was none fails whatever the allowance") {
  Json old_report = sample_report();
  old_report["totals"]["leaked_bytes"] = 0;
  const auto checks = check_baseline(sample_report(), old_report, 0.5);
  const Check& leaked = find_check(checks, "baseline.totals.leaked");
  CHECK_FALSE(leaked.passed);
  CHECK(leaked.measured_text == "4.00 KiB (from 0)");
}

TEST_CASE("JUnit: one testcase per check, a failure for each failing one, escaped") {
  Json report = sample_report();
  report["stages"].push_back(stage("a<b>&\"c\"", "a<b>&\"c\"", 10 * kMiB));
  const auto checks = check_budget(report, parse_budget(R"({"totals": {"peak_heap": "1MiB", "peak_rss": "1GiB"},
      "stages": {"a<b>&\"c\"": {"peak_heap": "1MiB"}, "missing": {"leaked": 0}}})", "b"));
  const std::string xml = render_junit(checks, "memstage gate");
  CHECK_THAT(xml, Catch::Contains("<testsuite name=\"memstage gate\" tests=\"4\" failures=\"3\""));
  CHECK_THAT(xml, Catch::Contains("name=\"stages.a&lt;b&gt;&amp;&quot;c&quot;.peak_heap\""));
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = xml.find(needle); at != std::string::npos; at = xml.find(needle, at + 1)) ++n;
    return n;
  };
  CHECK(count("<testcase ") == 4);
  CHECK(count("<failure ") == 3);
  CHECK(count("</failure>") == 3);
}

TEST_CASE("GitHub annotations: one ::error per failure, properties escaped") {
  const auto checks = check_budget(sample_report(), parse_budget(R"({"totals": {"peak_heap": "1MiB", "peak_rss": "1GiB"},
      "stages": {"vectorize": {"peak_heap": "1MiB"}}})", "b"));
  const std::string out = render_github(checks, "");
  CHECK(out ==
        "::error title=memstage gate totals.peak_heap::peak_heap of the whole run is 700 MiB, over the budget of 1.00 MiB\n"
        "::error title=memstage gate stages.vectorize.peak_heap::peak_heap of stage vectorize is 600 MiB, over the "
        "budget of 1.00 MiB\n");
  Json report = sample_report();
  report["stages"].push_back(stage("x", "a:b,c", 10 * kMiB));
  const auto odd = check_budget(report, parse_budget(R"({"stages": {"a:b,c": {"peak_heap": "1"}}})", "b"));
  CHECK_THAT(render_github(odd, ""), Catch::StartsWith("::error title=memstage gate stages.a%3Ab%2Cc.peak_heap::"));
}

TEST_CASE("a figure the report did not measure fails its check, whatever the limit") {
  Json report = sample_report();
  report["mode"] = "stats";
  report["totals"]["leaked_bytes"] = nullptr;
  const auto checks = check_budget(report, parse_budget(R"({"totals": {"leaked": "0", "peak_heap": "1GiB"}})", "b"));
  const Check& leaked = find_check(checks, "totals.leaked");
  CHECK_FALSE(leaked.passed);
  CHECK(leaked.unmeasured);
  CHECK(leaked.measured_text == "not measured");
  CHECK(leaked.message == "leaked of the whole run was not measured in stats mode, so its limit of 0 B cannot hold");
  CHECK(find_check(checks, "totals.peak_heap").passed);
  CHECK(exit_code(checks) == 1);
  CHECK_THAT(render_table(checks), Catch::Contains("NOT MEASURED"));
  CHECK_THAT(render_junit(checks, "g"), Catch::Contains("type=\"unmeasured\""));

  // An absent figure is not measured either: it must not pass as 0.
  Json absent = sample_report();
  absent["totals"].erase("peak_heap_bytes");
  CHECK(find_check(check_budget(absent, parse_budget(R"({"totals": {"peak_heap": "1GiB"}})", "b")), "totals.peak_heap")
            .unmeasured);
}

TEST_CASE("a malformed figure in the report is an input error, not a pass") {
  for (const Json& bad : {Json("big"), Json(-5), Json(true)}) {
    Json report = sample_report();
    report["totals"]["peak_heap_bytes"] = bad;
    CHECK_THROWS_AS(check_budget(report, parse_budget(R"({"totals": {"peak_heap": "1GiB"}})", "b"), "r.json"), GateError);
  }
  Json report = sample_report();
  report["stages"][1]["peak_heap_bytes"] = "big";
  CHECK_THROWS_WITH(check_budget(report, parse_budget(R"({"totals": {"peak_heap": "1GiB"}})", "b"), "r.json"),
                    "r.json: stages[1].peak_heap_bytes: \"big\" is not a figure (a number of 0 or more)");
}

TEST_CASE("baseline: a figure one report did not measure fails, one neither measured is skipped") {
  Json stats = sample_report();
  stats["mode"] = "stats";
  stats["leaks_measured"] = false;
  Json full = sample_report();
  full["mode"] = "full";
  auto checks = check_baseline(full, stats, 0.5);
  const Check& leaked = find_check(checks, "baseline.totals.leaked");
  CHECK(leaked.unmeasured);
  CHECK_THAT(leaked.message, Catch::Contains("not measured in the baseline (stats mode)"));
  CHECK(exit_code(checks) == 1);

  checks = check_baseline(stats, stats, 0.5);
  const Check& both = find_check(checks, "baseline.totals.leaked");
  CHECK(both.skipped);
  CHECK(exit_code(checks) == 0);
  CHECK_THAT(render_table(checks), Catch::Contains("skipped") && Catch::Contains("5 not measured by either report"));
  CHECK_THAT(render_junit(checks, "g"), Catch::Contains("skipped=\"5\"") && Catch::Contains("<skipped "));
}

TEST_CASE("the allowed growth of --max-growth: one rule with the budget's ratios, and no overflow") {
  CHECK(parse_max_growth("5%") == Approx(0.05));
  CHECK(parse_max_growth("0.05") == Approx(0.05));
  CHECK(parse_max_growth("500%") == Approx(5));
  CHECK(parse_max_growth("1") == Approx(1));
  CHECK_THROWS_WITH(parse_max_growth("5"), Catch::Contains("ambiguous") && Catch::Contains("5%"));
  CHECK_THROWS_WITH(parse_max_growth("1e18%"), Catch::Contains("gates nothing"));
  CHECK_THROWS_WITH(parse_max_growth("-5%"), Catch::Contains("must be a fraction"));
  // The largest growth allowed still formats and compares without overflow.
  const auto checks = check_baseline(sample_report(), sample_report(), parse_max_growth("1000000%"));
  CHECK(exit_code(checks) == 0);
}

TEST_CASE("a stage's own figures: its rise above its start and what it retained, worst occurrence") {
  Json report = sample_report();
  auto& stages = report["stages"];
  stages[3]["peak_heap_increase_bytes"] = 20 * kMiB;
  stages[4]["peak_heap_increase_bytes"] = 50 * kMiB;
  stages[3]["retained_bytes"] = 1000;
  stages[4]["retained_bytes"] = 2000;
  stages[1]["peak_rss_increase_bytes"] = 300 * kMiB;
  auto checks = check_budget(report, parse_budget(R"({"stages": {
      "train/epoch": {"peak_heap_increase": "40MiB", "retained": 4000},
      "vectorize": {"peak_rss_increase": "512MiB"}}})", "b"));
  CHECK(find_check(checks, "stages.train/epoch.peak_heap_increase").measured == 50 * kMiB);
  CHECK_FALSE(find_check(checks, "stages.train/epoch.peak_heap_increase").passed);
  // What the instances retained adds up, as leaks do.
  CHECK(find_check(checks, "stages.train/epoch.retained").measured == 3000);
  CHECK(find_check(checks, "stages.train/epoch.retained").passed);
  CHECK(find_check(checks, "stages.vectorize.peak_rss_increase").passed);
  CHECK(find_check(checks, "stages.vectorize.peak_rss_increase").stage == "vectorize");
  // A stage without the figure (a report older than it) did not measure it.
  checks = check_budget(report, parse_budget(R"({"stages": {"load": {"peak_heap_increase": "1GiB"}}})", "b"));
  CHECK(find_check(checks, "stages.load.peak_heap_increase").unmeasured);
  // The totals have no start to rise above.
  CHECK(error_of(R"({"totals": {"retained": "1MiB"}})").find("\"totals.retained\" is a figure of stages only") !=
        std::string::npos);
}

TEST_CASE("the checks as JSON: verdict, figures and the stage key, for programs that act on them") {
  const Json report = sample_report();
  const auto checks = check_budget(report, parse_budget(R"({"totals": {"peak_heap": "1GiB"}, "stages": {
      "vectorize": {"peak_heap": "512MiB"}, "gone": {"leaked": 0}}})", "b"));
  const Json out = Json::parse(render_json(checks));
  REQUIRE(out["checks"].size() == 3);
  CHECK(out["failed"] == 2);
  CHECK(out["checks"][0]["stage"].is_null());
  CHECK(out["checks"][0]["verdict"] == "ok");
  CHECK(out["checks"][1]["stage"] == "vectorize");
  CHECK(out["checks"][1]["metric"] == "peak_heap");
  CHECK(out["checks"][1]["verdict"] == "over");
  CHECK(out["checks"][1]["measured"] == 600 * kMiB);
  CHECK(out["checks"][1]["message"] == "peak_heap of stage vectorize is 600 MiB, over the budget of 512 MiB");
  CHECK(out["checks"][2]["verdict"] == "missing");
  CHECK(out["checks"][2]["measured"].is_null());
}
