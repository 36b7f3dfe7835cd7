// The analysis on hand-made event streams whose figures are known exactly.
#include <catch2/catch.hpp>
#include <filesystem>

#include "reports/analysis/analyzer.h"
#include "tests/unit/trace_builder.h"

using memstage::testing::TraceBuilder;
namespace reports = memstage::reports;

namespace {

reports::Report analyze(TraceBuilder& b, const std::string& name) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("memstage_analyzer_" + name + ".mst")).string();
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  return reports::analyze({path}, std::nullopt, options);
}

const reports::StageReport& stage(const reports::Report& r, const std::string& path) {
  for (const auto& s : r.stages) {
    if (s.path == path) return s;
  }
  FAIL("no stage " << path);
  return r.stages.front();
}

}  // namespace

TEST_CASE("peak, leaks and temporaries of a simple stream") {
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20});
  b.time(1'000'000).alloc(0x1000, 100, 0).alloc(0x2000, 50, 1);  // live 150
  b.free(0x2000);                                                // temporary, live 100
  b.time(2'000'000).alloc(0x3000, 400, 1);                       // live 500: the peak
  b.free(0x3000).alloc(0x4000, 10, 0).end(3'000'000);            // live 110
  const auto r = analyze(b, "simple");
  CHECK(r.totals.peak_heap_bytes == 500);
  CHECK(r.totals.peak_heap_time_s == Approx(0.002));
  CHECK(r.totals.allocations == 4);
  CHECK(r.totals.frees == 2);
  CHECK(r.totals.bytes_allocated == 560);
  CHECK(r.totals.temporary_allocations == 2);
  CHECK(r.totals.leaked_bytes == 110);
  CHECK(r.totals.leaked_blocks == 2);
  REQUIRE(r.leaks.size() == 1);  // both leaked blocks come from stack 0
  CHECK(r.leaks[0].bytes == 110);
  CHECK(r.leaks[0].blocks == 2);
  REQUIRE_FALSE(r.top_stacks_at_peak.empty());
  CHECK(r.top_stacks_at_peak[0].bytes == 400);  // stack 1 held most at the peak
  CHECK(r.top_stacks_at_peak[0].blocks == 1);
}

TEST_CASE("realloc chains count as free then allocation") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.alloc(0x1000, 16).free(0x1000).alloc(0x1000, 32, 0, true).free(0x1000).alloc(0x5000, 4096, 0, true);
  b.end(1);
  const auto r = analyze(b, "realloc");
  CHECK(r.totals.peak_heap_bytes == 4096);
  CHECK(r.totals.leaked_bytes == 4096);
  CHECK(r.totals.allocations == 3);
}

TEST_CASE("nested stages: peaks, retained, leaked and allocations per stage") {
  TraceBuilder b;
  b.process().stack({0x10}).stage_name("load").stage_name("parse").stage_name("train");
  b.stage_begin(0, 10).alloc(0x1000, 1000);              // load: +1000
  b.stage_begin(1, 20).alloc(0x2000, 500).alloc(0x3000, 300);  // load/parse: +800, live 1800
  b.free(0x3000).stage_end(30);                          // parse retains 500
  b.free(0x1000).stage_end(40);                          // load retains 500 (parse's block)
  b.stage_begin(2, 50).alloc(0x4000, 2000).free(0x4000).alloc(0x5000, 70).stage_end(60);
  b.end(70);
  const auto r = analyze(b, "stages");
  REQUIRE(r.stages.size() == 3);
  CHECK(r.stages[0].path == "load");
  CHECK(r.stages[1].path == "load/parse");
  CHECK(r.stages[2].path == "train");
  const auto& load = stage(r, "load");
  const auto& parse = stage(r, "load/parse");
  const auto& train = stage(r, "train");
  CHECK(load.figures.peak_heap_bytes == 1800);
  CHECK(parse.figures.peak_heap_bytes == 1800);
  CHECK(train.figures.peak_heap_bytes == 2500);
  CHECK(parse.retained_bytes == 500);
  CHECK(load.retained_bytes == 500);
  CHECK(train.retained_bytes == 70);
  CHECK(load.figures.allocations == 1);
  CHECK(parse.figures.allocations == 2);
  CHECK(parse.figures.leaked_bytes == 500);
  CHECK(load.figures.leaked_bytes == 0);
  CHECK(train.figures.leaked_bytes == 70);
  CHECK(train.figures.temporary_allocations == 1);
  CHECK(r.totals.peak_heap_bytes == 2500);
  CHECK(parse.depth == 1);
  CHECK(parse.parent == 0);
}

TEST_CASE("a stage never closed ends with the run and says so") {
  TraceBuilder b;
  b.process().stack({0x10}).stage_name("forever").stage_begin(0, 5).alloc(0x1000, 64);
  const auto r = analyze(b, "unclosed");  // no End record: a killed process
  REQUIRE(r.stages.size() == 1);
  CHECK_FALSE(r.stages[0].closed);
  CHECK(r.stages[0].figures.peak_heap_bytes == 64);
  CHECK_FALSE(r.warnings.empty());
}

TEST_CASE("a free of an address never allocated is ignored") {
  TraceBuilder b;
  b.process().stack({0x10}).free(0x9999).alloc(0x1000, 8).end(1);
  const auto r = analyze(b, "unknown_free");
  CHECK(r.totals.frees == 0);
  CHECK(r.totals.leaked_bytes == 8);
}
