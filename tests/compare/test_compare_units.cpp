// Units of harness/compare: statistics, word splitting, run plans, the compare and diff
// models, HTML escaping.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <algorithm>

#include "harness/compare/compare_model.h"
#include "harness/compare/compare_render.h"
#include "harness/compare/diff_model.h"
#include "harness/compare/format.h"
#include "harness/compare/run_plan.h"
#include "harness/compare/statistics.h"
#include "harness/compare/word_split.h"

using namespace memstage::compare;
using Words = std::vector<std::string>;

TEST_CASE("summarize: median, min and max", "[statistics]") {
  const Summary odd = summarize({3, 1, 2});
  CHECK(odd.count == 3);
  CHECK(odd.median == 2);
  CHECK(odd.min == 1);
  CHECK(odd.max == 3);
  const Summary even = summarize({4, 1, 3, 2});
  CHECK(even.median == 2.5);  // the mean of the middle two
  CHECK(even.min == 1);
  CHECK(even.max == 4);
  const Summary one = summarize({7.5});
  CHECK(one.median == 7.5);
  CHECK(one.min == 7.5);
  CHECK(one.max == 7.5);
  CHECK(summarize({}).count == 0);
  // An outlier moves the median little.
  CHECK(summarize({1.0, 1.1, 1.2, 1.05, 50.0}).median == 1.1);
}

TEST_CASE("split_words: blanks, quotes, backslashes", "[split]") {
  CHECK(split_words("a b  c") == Words{"a", "b", "c"});
  CHECK(split_words("  lead\ttrail\n ") == Words{"lead", "trail"});
  CHECK(split_words("") == Words{});
  CHECK(split_words("   ") == Words{});
  CHECK(split_words("prog --data 'my file.csv'") == Words{"prog", "--data", "my file.csv"});
  CHECK(split_words("say \"it's here\"") == Words{"say", "it's here"});
  CHECK(split_words("'single \"keeps\" \\n'") == Words{"single \"keeps\" \\n"});
  CHECK(split_words(R"("a \"q\" \\ \$x \n")") == Words{R"(a "q" \ $x \n)"});
  CHECK(split_words(R"(a\ b c\'d)") == Words{"a b", "c'd"});
  CHECK(split_words("x'' \"\" y") == Words{"x", "", "y"});
  CHECK(split_words("con'cat'\"ena\"ted") == Words{"concatenated"});
  CHECK(split_words("$HOME *.txt ~") == Words{"$HOME", "*.txt", "~"});  // nothing expanded
  CHECK_THROWS_AS(split_words("'open"), WordSplitError);
  CHECK_THROWS_AS(split_words("\"open"), WordSplitError);
  CHECK_THROWS_AS(split_words("trailing\\"), WordSplitError);
}

TEST_CASE("parse_variant", "[plan]") {
  const auto [name, command] = parse_variant("naive=memstage-trainer --pipeline naive --data 'a b.csv'");
  CHECK(name == "naive");
  CHECK(command == Words{"memstage-trainer", "--pipeline", "naive", "--data", "a b.csv"});
  CHECK_THROWS(parse_variant("no-equals"));
  CHECK_THROWS(parse_variant("=cmd"));
  CHECK_THROWS(parse_variant("empty="));
}

TEST_CASE("plan_runs interleaves round-robin, full runs first", "[plan]") {
  const std::vector<Subject> subjects = {{"a", {"x"}, {}}, {"b", {"y"}, {}}, {"c", {"z"}, {}}};
  const auto plan = plan_runs(subjects, 2);
  REQUIRE(plan.size() == 9);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(plan[i].mode == RunMode::kFull);
    CHECK(plan[i].subject == i);
  }
  for (size_t i = 3; i < 9; ++i) {
    CHECK(plan[i].mode == RunMode::kStats);
    CHECK(plan[i].subject == (i - 3) % 3);
    CHECK(plan[i].repeat == (i - 3) / 3);
  }
  CHECK(plan[4].dir_name == "b/stats-1");
  CHECK(plan[8].dir_name == "c/stats-2");
}

TEST_CASE("make_subjects and allocators", "[plan]") {
  const std::vector<AllocatorChoice> allocs = {{"glibc", "", {}}, {"jemalloc", "/x/libjemalloc.so.2", {}}};
  auto by_alloc = make_subjects({}, {"prog"}, allocs);
  REQUIRE(by_alloc.size() == 2);
  CHECK(by_alloc[1].name == "jemalloc");
  CHECK(by_alloc[1].allocator->library == "/x/libjemalloc.so.2");
  auto both = make_subjects({{"n", {"a"}}, {"o", {"b"}}}, {}, allocs);
  REQUIRE(both.size() == 4);
  CHECK(both[3].name == "o+jemalloc");
  auto variants = make_subjects({{"n", {"a"}}, {"o", {"b"}}}, {}, {});
  CHECK(variants[1].name == "o");
  CHECK_FALSE(variants[1].allocator.has_value());
  CHECK_THROWS(make_subjects({{"n", {"a"}}, {"n", {"b"}}}, {}, {}));
  CHECK(resolve_allocator("glibc").library.empty());
  CHECK_THROWS(resolve_allocator("nosuchalloc"));
  CHECK_THROWS(resolve_allocator("/no/such/lib.so"));
  // A file that is no shared library is refused, not run on glibc under its name.
  CHECK_THROWS_WITH(resolve_allocator("/etc/passwd"),
                    "allocator library /etc/passwd is not a shared library (an ELF .so to preload)");
  CHECK(folder_name("a/b c") == "a_b_c");
}

namespace {

nlohmann::json report(double duration, uint64_t heap, const std::string& stage_name, double stage_s,
                      uint64_t stage_heap, bool estimated = false) {
  auto figures = [&](uint64_t h) {
    return nlohmann::json{{"peak_heap_bytes", h},
                          {"peak_rss_bytes", 2 * h},
                          {"leaked_bytes", 10},
                          {"allocations", 100},
                          {"bytes_allocated", 4 * h},
                          {"fragmentation", {{"ratio", 0.25}, {"estimated", estimated}}},
                          {"rss_breakdown",
                           {{"live_bytes", h / 2},
                            {"allocator_in_use_bytes", h / 2 + 8},
                            {"allocator_resident_bytes", h},
                            {"rss_bytes", 2 * h},
                            {"tracer_bytes", 5},
                            {"estimated", estimated}}}};
  };
  nlohmann::json st = figures(stage_heap);
  st["name"] = stage_name;
  st["path"] = stage_name;
  st["start_s"] = 1.0;
  st["end_s"] = 1.0 + stage_s;
  return {{"duration_s", duration}, {"allocator", "glibc"}, {"totals", figures(heap)}, {"stages", {st}}};
}

}  // namespace

TEST_CASE("build_compare: time from stats runs, memory from the full run", "[compare]") {
  const std::vector<Subject> subjects = {{"a", {"x"}, {}}, {"b", {"y"}, {}}};
  const auto plan = plan_runs(subjects, 3);
  std::vector<RunRecord> runs;
  const double times[] = {0, 0, 1.0, 2.0, 3.0, 2.5, 2.0, 2.2};  // a: 1, 3, 2; b: 2, 2.5, 2.2
  for (size_t i = 0; i < plan.size(); ++i) {
    RunRecord r;
    r.planned = plan[i];
    const bool full = plan[i].mode == RunMode::kFull;
    r.report = report(full ? 99.0 : times[i], full ? 1000 : 1, "load", full ? 50 : times[i] / 2, full ? 600 : 1,
                      plan[i].subject == 1);
    runs.push_back(r);
  }
  const CompareResult result = build_compare(subjects, runs, 3);
  REQUIRE(result.subjects.size() == 2);
  const SubjectResult& a = result.subjects[0];
  CHECK(a.totals.wall_time_s.median == 2.0);
  CHECK(a.totals.wall_time_s.min == 1.0);
  CHECK(a.totals.wall_time_s.max == 3.0);
  REQUIRE(a.totals.memory);
  CHECK(a.totals.memory->peak_heap_bytes == 1000);  // the full run's, not a stats run's
  REQUIRE(a.stage("load"));
  CHECK(a.stage("load")->wall_time_s.median == 1.0);
  CHECK(a.stage("load")->memory->peak_heap_bytes == 600);
  CHECK(result.subjects[1].totals.wall_time_s.median == 2.2);
  CHECK(result.any_estimated());
  const auto j = compare_to_json(result);
  CHECK(j["runs"].size() == 8);
  CHECK(j["runs"][2]["subject"] == "a");
  CHECK(j["runs"][3]["subject"] == "b");
  CHECK(j["subjects"][1]["totals"]["memory"]["rss_breakdown"]["estimated"] == true);
  CHECK(j["subjects"][0]["full_report"] == "a/full/report.html");
  const std::string html = render_compare_html(result);
  CHECK(html.find("href='a/stats-2/report.html'") != std::string::npos);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("≈") != std::string::npos);
  CHECK(html.find("http") == html.find("http://www.w3.org/2000/svg"));  // nothing fetched
}

TEST_CASE("build_diff: deltas, percent, stages matched by path", "[diff]") {
  nlohmann::json a = report(2.0, 1000, "load", 1.0, 400);
  nlohmann::json b = report(3.0, 1500, "load", 0.5, 200);
  nlohmann::json extra = b["stages"][0];
  extra["path"] = "only_b";
  b["stages"].push_back(extra);
  const DiffResult d = build_diff(a, b, "A.json", "B.json");
  REQUIRE(d.rows.size() == 3);
  CHECK(d.rows[0].path.empty());  // totals first
  const MetricDelta& heap = d.rows[0].metrics[1];
  CHECK(heap.name == "peak_heap_bytes");
  CHECK(*heap.delta == 500);
  CHECK(*heap.percent == Approx(50.0));
  const MetricDelta& time = d.rows[0].metrics[0];
  CHECK(*time.delta == Approx(1.0));
  CHECK(d.rows[1].path == "load");
  CHECK(*d.rows[1].metrics[1].delta == -200);
  CHECK(*d.rows[1].metrics[1].percent == Approx(-50.0));
  CHECK(*d.rows[1].metrics[0].delta == Approx(-0.5));
  CHECK(d.rows[2].path == "only_b");
  CHECK_FALSE(d.rows[2].in_a);
  CHECK_FALSE(d.rows[2].metrics[1].delta.has_value());
  const std::string text = render_diff_text(d);
  CHECK(text.find("+500 B") != std::string::npos);
  CHECK(text.find("+50.0%") != std::string::npos);
  CHECK(diff_to_json(d)["rows"][1]["metrics"]["peak_heap_bytes"]["delta"] == -200.0);
}

TEST_CASE("build_diff: the device peak, only when a run used device memory", "[diff]") {
  const auto names = [](const DiffRow& row) {
    std::vector<std::string> out;
    for (const MetricDelta& m : row.metrics) out.push_back(m.name);
    return out;
  };
  nlohmann::json a = report(2.0, 1000, "train", 1.0, 400);
  nlohmann::json b = report(2.0, 1000, "train", 1.0, 400);
  a["totals"]["peak_device_bytes"] = nullptr;  // a run without device memory
  a["stages"][0]["peak_device_bytes"] = nullptr;
  const DiffResult host_only = build_diff(a, a, "A.json", "A.json");
  const std::vector<std::string> host_names = names(host_only.rows[0]);
  CHECK(std::find(host_names.begin(), host_names.end(), "peak_device_bytes") == host_names.end());
  b["totals"]["peak_device_bytes"] = 3 << 20;
  b["stages"][0]["peak_device_bytes"] = 2 << 20;
  const DiffResult d = build_diff(a, b, "A.json", "B.json");
  const MetricDelta& total = d.rows[0].metrics.back();
  CHECK(total.name == "peak_device_bytes");
  CHECK(*total.a == 0);  // none in A
  CHECK(*total.delta == 3 << 20);
  const MetricDelta& stage = d.rows[1].metrics.back();
  CHECK(stage.name == "peak_device_bytes");
  CHECK(*stage.b == 2 << 20);
  CHECK(diff_to_json(d)["rows"][1]["metrics"]["peak_device_bytes"]["delta"] == double(2 << 20));
  CHECK(render_diff_text(d).find("peak_device_bytes") != std::string::npos);
}

TEST_CASE("HTML escapes hostile names", "[html]") {
  CHECK(html_escape("<script>alert('x')</script>&\"") ==
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
  const std::string hostile = "<img src=x onerror=alert(1)>";
  nlohmann::json a = report(1, 10, hostile, 1, 5);
  const std::string html = render_diff_html(build_diff(a, a, "a", "b"));
  CHECK(html.find(hostile) == std::string::npos);
  CHECK(html.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
}

TEST_CASE("format", "[format]") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_signed_bytes(-2048) == "-2.00 KiB");
  CHECK(format_percent(std::nullopt) == "n/a");
  CHECK(format_percent(12.345) == "+12.3%");
  CHECK(pad_left("–", 3) == "  –");
}
