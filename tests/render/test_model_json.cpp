// One serializer per model type (reports/render/model_json.h): report.json, the page's
// data and the Chrome trace give the same figures under the same names.
#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "reports/render/export/chrome_trace.h"
#include "reports/render/html/render_html.h"
#include "reports/render/json/json_report.h"
#include "tests/render/fixture_report.h"
#include "tests/render/page_data.h"

namespace {

using memstage::reports::render_chrome_trace;
using memstage::reports::render_html;
using memstage::reports::report_to_json;
using nlohmann::json;

json page_data(const memstage::reports::Report& report) {
  const std::string html = render_html(report);
  const std::string open = R"(<script type="application/json" id="memstage-data">)";
  const auto begin = html.find(open);
  REQUIRE(begin != std::string::npos);
  const auto end = html.find("</script", begin);
  return memstage::tests::parse_page_data(html.substr(begin + open.size(), end - begin - open.size()));
}

// The Chrome trace's stage slices, by path.
std::map<std::string, json> chrome_stage_args(const memstage::reports::Report& report) {
  std::map<std::string, json> args;
  const json trace = json::parse(render_chrome_trace(report));
  for (const json& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "stage") args[e["args"]["path"].get<std::string>()] = e["args"];
  }
  return args;
}

const char* const kFigures[] = {"peak_heap_bytes", "peak_heap_time_s", "peak_rss_bytes", "peak_program_rss_bytes",
                                "tracer_peak_bytes", "allocations", "frees", "bytes_allocated",
                                "temporary_allocations", "leaked_bytes", "leaked_blocks", "mmap_peak_bytes",
                                "fragmentation", "rss_breakdown"};

}  // namespace

TEST_CASE("report.json, the page and the Chrome trace give each stage the same figures", "[model_json]") {
  const auto report = memstage::tests::make_fixture_report();
  const json page = page_data(report);
  const json contract = json::parse(report_to_json(report).dump());
  const auto chrome = chrome_stage_args(report);
  REQUIRE(page["stages"].size() == report.stages.size());
  REQUIRE(contract["stages"].size() == report.stages.size());
  for (size_t s = 0; s < report.stages.size(); ++s) {
    const json& row = contract["stages"][s];
    for (const char* figure : kFigures) CHECK(page["stages"][s]["figures"][figure] == row[figure]);
    const json& args = chrome.at(row["path"].get<std::string>());
    for (const char* figure : {"peak_heap_bytes", "peak_rss_bytes", "allocations", "bytes_allocated", "leaked_bytes"}) {
      CHECK(args[figure] == row[figure]);
    }
    CHECK(args["fragmentation_ratio"] == row["fragmentation"]["ratio"]);
    CHECK(args["retained_bytes"] == row["retained_bytes"]);
  }
  for (const char* figure : kFigures) CHECK(page["totals"][figure] == contract["totals"][figure]);
  CHECK(page["processes"] == contract["processes"]);
}

TEST_CASE("a figure the mode did not measure is null in report.json and the Chrome trace", "[model_json]") {
  auto report = memstage::tests::make_fixture_report();
  report.mode = "stats";
  report.leaks_measured = false;
  const json contract = json::parse(report_to_json(report).dump());
  CHECK(contract["totals"]["leaked_bytes"].is_null());
  CHECK(contract["totals"]["temporary_allocations"].is_null());
  for (const auto& [path, args] : chrome_stage_args(report)) CHECK(args["leaked_bytes"].is_null());
  // The page keeps the model's numbers and says what was measured beside them.
  const json page = page_data(report);
  CHECK(page["leaks_measured"] == false);
  CHECK(page["totals"]["leaked_bytes"].is_number());
}
