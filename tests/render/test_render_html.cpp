#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "reports/analysis/stage_rows.h"
#include "reports/render/html/render_html.h"
#include "tests/render/fixture_report.h"
#include "tests/render/page_data.h"

namespace {

using memstage::reports::render_html;
using nlohmann::json;

const std::string kDataOpen = R"(<script type="application/json" id="memstage-data">)";

// The text between the data block's opening tag and the next "</script".
std::string data_block(const std::string& html) {
  const auto begin = html.find(kDataOpen);
  REQUIRE(begin != std::string::npos);
  const auto content = begin + kDataOpen.size();
  const auto end = html.find("</script", content);
  REQUIRE(end != std::string::npos);
  return html.substr(content, end - content);
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("HTML report carries hostile names only escaped, inside its data block", "[html]") {
  const auto report = memstage::tests::make_fixture_report();
  const std::string html = render_html(report);
  const std::string block = data_block(html);

  // Nothing from the data can end the script element or open markup.
  CHECK(block.find('<') == std::string::npos);
  CHECK(block.find('>') == std::string::npos);
  CHECK(block.find('&') == std::string::npos);
  CHECK(block.find("\u2028") == std::string::npos);
  CHECK(block.find("\\u2028") != std::string::npos);
  CHECK(html.find(memstage::tests::kHostileStageName) == std::string::npos);
  CHECK(block.find(R"(\u003c/script\u003e\u003cimg src=x onerror=alert(1)\u003e)") != std::string::npos);
  // Two script elements (data, code): the data ends exactly where it should.
  CHECK(count(html, "</script>") == 2);

  // The escapes decode back to the exact names.
  const json data = memstage::tests::parse_page_data(block);
  bool hostile_found = false;
  for (const auto& stage : data["stages"]) hostile_found |= stage["name"] == memstage::tests::kHostileStageName;
  CHECK(hostile_found);
  bool awkward_found = false;
  for (const auto& frame : data["frames"]) awkward_found |= frame[1] == memstage::tests::kAwkwardFunctionName;
  CHECK(awkward_found);
}

TEST_CASE("HTML report holds what its sections need", "[html]") {
  const auto report = memstage::tests::make_fixture_report();
  const json data = memstage::tests::parse_page_data(data_block(render_html(report)));
  CHECK(data["stages"].size() == report.stages.size());
  CHECK(data["timeline"]["t_s"].size() == report.timeline.size());
  CHECK(data["worst_stage"] == 4);  // toarray holds the densified matrix
  CHECK(data["leaks"]["groups"].size() == report.leaks.size());
  CHECK(data["processes"].size() == 2);
  // Leaked stacks keep every frame; an unsymbolized frame is labelled module+offset.
  const auto& frames = data["frames"];
  const auto& leak_a = data["leaks"]["groups"][0];
  CHECK(leak_a["bytes"] == report.leaks[0].bytes);
  const auto& stack = data["stacks"][std::to_string(leak_a["stack"].get<int>())];
  CHECK(stack.size() == report.frames_of(report.stacks[leak_a["stack"].get<size_t>()]).size());
  CHECK(frames[stack[1].get<size_t>()][0] == "leak_a");
  bool offset_label = false;
  for (const auto& f : frames) offset_label |= f[0] == "libtextfeatures.so+0x1180";
  CHECK(offset_label);
  // The flame graph's figures add up to the report's.
  uint64_t leaked = 0, allocated = 0;
  for (const auto& f : data["flame"]["figures"]) {
    leaked += f[3].get<uint64_t>();
    allocated += f[4].get<uint64_t>();
  }
  CHECK(leaked == report.totals.leaked_bytes);
  CHECK(allocated == report.totals.bytes_allocated);
  // Growth over time: each growing stack with its site, its series and its whole stack.
  REQUIRE(data["growth"]["stacks"].size() == report.growth->stacks.size());
  const auto& growing = data["growth"]["stacks"][0];
  CHECK(frames[growing["site"].get<size_t>()][0] == "leak_a");
  CHECK(growing["series"]["t_s"].size() == report.growth->stacks[0].series.size());
  CHECK(growing["bytes_per_s"] == report.growth->stacks[0].bytes_per_s);
  CHECK(data["stacks"].contains(std::to_string(growing["stack"].get<int>())));
}

TEST_CASE("HTML report: top allocation sites are program frames, one row each", "[html]") {
  const auto report = memstage::tests::make_fixture_report();
  const json data = memstage::tests::parse_page_data(data_block(render_html(report)));
  const auto& frames = data["frames"];
  const auto& sites = data["top_sites"];
  // The fixture's stacks pass through operator new, malloc, std::__new_allocator,
  // vector::_M_realloc_insert and basic_string::_M_construct; ~100 sites reached by 300 stacks.
  CHECK(sites["distinct_sites"].get<size_t>() < sites["distinct_stacks"].get<size_t>());
  // What each site's rows should add up to: every stack's bytes, by its first frame the
  // analysis did not flag as plumbing (or its innermost Python frame).
  std::map<std::string, uint64_t> expected_bytes;
  for (const auto& f : report.stack_figures) {
    const auto ids = report.frames_of(report.stacks[f.stack]);
    const memstage::reports::Frame* site = nullptr;
    for (auto id : ids) {
      if (!site && !report.frame(id).allocator) site = &report.frame(id);
    }
    for (auto id : ids) {
      if (report.frame(id).kind == "python") {
        site = &report.frame(id);
        break;
      }
    }
    expected_bytes[site->function + ":" + std::to_string(site->line)] += f.bytes_allocated;
  }
  for (const char* list : {"by_bytes", "by_count", "by_temporary"}) {
    std::set<std::string> seen;
    REQUIRE(sites[list].size() > 10);
    for (const auto& row : sites[list]) {
      const auto& site = frames[row["site"].get<size_t>()];
      INFO(list << ": " << site[0]);
      CHECK(site[8] == false);  // the model's flag: not plumbing
      CHECK(site[1].get<std::string>().find("std::") == std::string::npos);
      CHECK(site[1] != "malloc");
      CHECK(site[1].get<std::string>().rfind("operator new", 0) == std::string::npos);
      const std::string key = site[1].get<std::string>() + ":" + std::to_string(site[3].get<int>());
      CHECK(seen.insert(key).second);  // one row per site
      CHECK(row["bytes_allocated"] == expected_bytes[key]);
      // The stack a row shows is one of its site's, with the site in it.
      const auto& stack = data["stacks"][std::to_string(row["stack"].get<size_t>())];
      CHECK(std::find(stack.begin(), stack.end(), row["site"]) != stack.end());
    }
  }
  CHECK(frames[sites["by_bytes"][0]["site"].get<size_t>()][0] == "numpy::PyArray_NewFromDescr");
  // Leaks are named by their site too.
  CHECK(frames[data["leaks"]["groups"][0]["site"].get<size_t>()][0] == "leak_a");
}

TEST_CASE("HTML report of an empty Report renders", "[html]") {
  const std::string html = render_html(memstage::reports::Report{});
  const json data = memstage::tests::parse_page_data(data_block(html));
  CHECK(data["stages"].empty());
  CHECK(data["worst_stage"] == -1);
  CHECK(data["flame"]["figures"].empty());
}

TEST_CASE("HTML report stays small and quick with 100,000 distinct stacks", "[html][large]") {
  memstage::tests::FixtureOptions options;
  options.stack_count = 100000;
  options.timeline_points = 200000;
  const auto report = memstage::tests::make_fixture_report(options);
  const auto start = std::chrono::steady_clock::now();
  const std::string html = render_html(report);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const json data = memstage::tests::parse_page_data(data_block(html));
  INFO("render_html took " << seconds << " s, " << html.size() << " bytes, "
                           << data["flame"]["parent"].size() << " flame nodes of " << data["flame"]["total_nodes"]);
  CHECK(seconds < 20);
  CHECK(html.size() < 16u * 1024 * 1024);
  CHECK(data["flame"]["pruned_nodes"].get<size_t>() > 0);
  CHECK(data["flame"]["parent"].size() <= 40001);
  CHECK(data["timeline"]["t_s"].size() <= 4100);
  // Thinning keeps the heap's peak.
  uint64_t max_heap = 0;
  for (const auto& h : data["timeline"]["heap_bytes"]) max_heap = std::max(max_heap, h.get<uint64_t>());
  CHECK(max_heap == report.totals.peak_heap_bytes);
}

TEST_CASE("HTML report stays small however many stage instances a long run marks", "[html]") {
  auto report = memstage::tests::make_fixture_report();
  const std::string short_page = render_html(report);
  const size_t fixture_stages = report.stages.size();
  memstage::tests::add_loop_stages(report, 50000);  // 50 s of 1 ms batches, each two stages
  const std::string page = render_html(report);
  const json data = memstage::tests::parse_page_data(data_block(page));
  // The analysis's rows (stage_rows.h): the first instances and each path's highest peak on
  // their own, the other instances of each path one row. The page grows by about a hundred
  // rows, not 100,000.
  CHECK(data["stage_instances"] == fixture_stages + 100000);
  CHECK(data["stage_grouping"].get<std::string>().find(std::to_string(fixture_stages + 100000) + " stage instances") !=
        std::string::npos);
  REQUIRE(data["stages"].size() <= memstage::reports::StageRows::kFirstInstancesKept + 4);
  uint64_t batches = 0, batch_allocations = 0, batch_peak = 0, forward_leaked = 0;
  int batch_group = -1, forward_group = -1;
  for (size_t i = 0; i < data["stages"].size(); ++i) {
    const auto& s = data["stages"][i];
    if (s["path"] == "serve_batch") {
      batches += s["instances"].get<uint64_t>();
      batch_allocations += s["figures"]["allocations"].get<uint64_t>();
      batch_peak = std::max(batch_peak, s["figures"]["peak_heap_bytes"].get<uint64_t>());
      if (s["instances"] > 1) batch_group = static_cast<int>(i);
    } else if (s["path"] == "serve_batch/forward") {
      forward_leaked += s["figures"]["leaked_bytes"].get<uint64_t>();
      if (s["instances"] > 1) forward_group = static_cast<int>(i);
    }
  }
  CHECK(batches == 50000);
  CHECK(batch_allocations == 50000 * 10);
  CHECK(batch_peak == 200 * 1048576 + 96 * 4096);
  CHECK(forward_leaked == 50000ull * 4096);
  REQUIRE(batch_group >= 0);
  REQUIRE(forward_group >= 0);
  CHECK(data["stages"][forward_group]["parent"] == batch_group);
  // A group's duration is its instances' (0.8-0.9 ms each), not first start to last end.
  CHECK(data["stages"][batch_group]["open_s"].get<double>() < 0.001 * data["stages"][batch_group]["instances"].get<double>());
  // Every timeline point and flame figure names a row.
  for (const auto& s : data["timeline"]["stage"]) CHECK(s.get<int>() < static_cast<int>(data["stages"].size()));
  for (const auto& f : data["flame"]["figures"]) CHECK(f[1].get<int>() < static_cast<int>(data["stages"].size()));
  // 100,000 stage instances and 50,000 timeline points add a few hundred kilobytes at most.
  INFO("fixture page " << short_page.size() << " bytes, with the long tail " << page.size());
  CHECK(page.size() < short_page.size() + 1'000'000);
}
