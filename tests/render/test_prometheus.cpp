#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "reports/render/prometheus/metrics_text.h"
#include "tests/render/fixture_report.h"

namespace {

using memstage::reports::render_prometheus;

// Every line a HELP, a TYPE or a sample with labels; no family's samples apart from its TYPE.
void check_exposition_format(const std::string& text) {
  const std::regex sample(R"re([a-z_]+\{([a-z_]+="([^"\\]|\\.)*",?)*\} [-+0-9.e]+)re");
  std::set<std::string> families_done;
  std::string family;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      CHECK(families_done.insert(family).second);
      continue;
    }
    CHECK(std::regex_match(line, sample));
    CHECK(line.rfind(family + "{", 0) == 0);
  }
}

size_t series_of(const std::string& text, const std::string& name) {
  size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.rfind(name + "{", 0) == 0;
  return n;
}

}  // namespace

TEST_CASE("Prometheus text: every family once, with HELP and TYPE, labels escaped", "[prometheus]") {
  auto report = memstage::tests::make_fixture_report();
  report.processes.at(0).command = {"prog", "say \"hi\"\\", "two\nlines"};
  const std::string text = render_prometheus(report);
  check_exposition_format(text);
  CHECK(text.find(R"(command="prog say \"hi\"\\ two\nlines")") != std::string::npos);
  CHECK(series_of(text, "memstage_heap_live_bytes") == report.processes.size());
  CHECK(text.find("# TYPE memstage_allocations_total counter\n") != std::string::npos);
  CHECK(text.find("# TYPE memstage_heap_live_bytes gauge\n") != std::string::npos);
}

TEST_CASE("Prometheus text: one series per stage path, growth at most 20 sites", "[prometheus]") {
  auto report = memstage::tests::make_fixture_report();
  memstage::tests::add_loop_stages(report, 500);  // 500 instances of the same two paths
  REQUIRE(report.growth);
  while (report.growth->stacks.size() < 100) {
    for (memstage::reports::StackIndex s = 0; s < report.stacks.size() && report.growth->stacks.size() < 100; ++s) {
      report.growth->stacks.push_back({s, 1000.0 + s, 4096, 0, 0.99, {}, std::nullopt});
    }
  }
  const std::string text = render_prometheus(report);
  check_exposition_format(text);
  std::set<std::string> paths;
  for (const auto& s : report.stages) paths.insert(s.path);
  CHECK(series_of(text, "memstage_stage_peak_heap_bytes") == std::min(paths.size(), memstage::reports::kMetricsStages));
  CHECK(series_of(text, "memstage_growth_bytes_per_second") <= memstage::reports::kMetricsGrowthSites);
  CHECK(series_of(text, "memstage_growth_bytes_per_second") > 0);
}

TEST_CASE("Prometheus text of an empty report is valid", "[prometheus]") {
  check_exposition_format(render_prometheus(memstage::reports::Report{}));
}
