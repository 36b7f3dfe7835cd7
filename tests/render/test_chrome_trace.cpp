#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "reports/render/export/chrome_trace.h"
#include "tests/render/fixture_report.h"

using nlohmann::json;

TEST_CASE("Chrome trace is valid JSON with heap and RSS counters and nested stage slices", "[chrome_trace]") {
  const auto report = memstage::tests::make_fixture_report();
  const json trace = json::parse(memstage::reports::render_chrome_trace(report));
  REQUIRE(trace["traceEvents"].is_array());

  size_t heap_counters = 0, rss_counters = 0;
  std::map<std::string, json> slices;  // by name
  for (const auto& e : trace["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    if (e["ph"] == "C" && e["name"] == "heap") {
      ++heap_counters;
      CHECK(e["args"].contains("heap_bytes"));
    }
    if (e["ph"] == "C" && e["name"] == "rss") ++rss_counters;
    if (e["ph"] == "X") slices[e["name"].get<std::string>()] = e;
  }
  CHECK(heap_counters == report.timeline.size());
  CHECK(rss_counters == report.timeline.size());
  CHECK(slices.size() == report.stages.size());
  CHECK(slices.count(memstage::tests::kHostileStageName) == 1);

  // Microseconds: "vectorize" runs from 3 s to 7.5 s.
  const auto& vectorize = slices.at("vectorize");
  CHECK(vectorize["ts"].get<double>() == Approx(3e6));
  CHECK(vectorize["dur"].get<double>() == Approx(4.5e6));
  CHECK(vectorize["args"]["path"] == "vectorize");
  // Children lie within their parents on the same track.
  for (const auto& stage : report.stages) {
    if (stage.parent < 0) continue;
    const auto& child = slices.at(stage.name);
    const auto& parent = slices.at(report.stages[stage.parent].name);
    CHECK(child["tid"] == parent["tid"]);
    CHECK(child["ts"].get<double>() >= parent["ts"].get<double>());
    CHECK(child["ts"].get<double>() + child["dur"].get<double>() <=
          parent["ts"].get<double>() + parent["dur"].get<double>());
  }
}

TEST_CASE("Chrome trace of an empty Report is valid JSON", "[chrome_trace]") {
  const json trace = json::parse(memstage::reports::render_chrome_trace(memstage::reports::Report{}));
  CHECK(trace["traceEvents"].is_array());
}
