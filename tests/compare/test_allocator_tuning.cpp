// Units of --tune and --suggest (harness/compare/allocator_tuning.h, suggest.h): a setting as
// the allocator reads it, a malformed one refused in one line, the grid, the ranking.
#include <catch2/catch.hpp>

#include "harness/compare/allocator_tuning.h"
#include "harness/compare/suggest.h"

using namespace memstage::compare;

TEST_CASE("parse_tuning: each allocator's own variables", "[tuning]") {
  const Tuning glibc = parse_tuning("glibc:MALLOC_ARENA_MAX=2,M_TRIM_THRESHOLD_=131072");
  CHECK(glibc.allocator == "glibc");
  CHECK(glibc.name == "glibc:MALLOC_ARENA_MAX=2,M_TRIM_THRESHOLD_=131072");
  CHECK(glibc.environment == Environment{{"MALLOC_ARENA_MAX", "2"}, {"MALLOC_TRIM_THRESHOLD_", "131072"}});
  CHECK(glibc.settings == Environment{{"MALLOC_ARENA_MAX", "2"}, {"M_TRIM_THRESHOLD_", "131072"}});
  CHECK(parse_tuning("glibc:glibc.malloc.arena_max=1,glibc.malloc.tcache_count=0").environment ==
        Environment{{"GLIBC_TUNABLES", "glibc.malloc.arena_max=1:glibc.malloc.tcache_count=0"}});
  CHECK(parse_tuning("jemalloc:dirty_decay_ms=0,narenas=2").environment ==
        Environment{{"MALLOC_CONF", "dirty_decay_ms:0,narenas:2"}});
  CHECK(parse_tuning("tcmalloc:release_rate=10,TCMALLOC_AGGRESSIVE_DECOMMIT=true").environment ==
        Environment{{"TCMALLOC_RELEASE_RATE", "10"}, {"TCMALLOC_AGGRESSIVE_DECOMMIT", "true"}});
  CHECK(parse_tuning("mimalloc:decommit_delay=0").environment == Environment{{"MIMALLOC_DECOMMIT_DELAY", "0"}});
}

TEST_CASE("parse_tuning: a malformed tuning is one line naming it", "[tuning]") {
  for (const char* spec : {"glibc", "foo:x=1", "jemalloc:", "jemalloc:narenas", "jemalloc:narenas=", "jemalloc:=1",
                           "glibc:MALLOC_FOO=1", "glibc:M_ARENA_MAX_=1", "jemalloc:narenas=1:2", "tcmalloc:a b=1"}) {
    INFO(spec);
    try {
      parse_tuning(spec);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find('\n') == std::string::npos);
      CHECK(what.find(spec) != std::string::npos);
    }
  }
}

TEST_CASE("suggestion_grid: every entry parses, for the allocator it is for", "[tuning]") {
  for (const char* allocator : {"glibc", "jemalloc", "tcmalloc", "mimalloc"}) {
    const auto grid = suggestion_grid(allocator);
    CHECK(grid.size() >= 3);
    for (const std::string& spec : grid) CHECK(parse_tuning(spec).allocator == allocator);
  }
  CHECK(suggestion_grid("libfoo.so").empty());
}

namespace {

SubjectResult subject(const std::string& name, const std::string& allocator, double total_rss, double stage_rss) {
  SubjectResult s;
  s.name = name;
  s.allocator = allocator;
  if (name != allocator) s.environment = {{"X", "1"}};
  s.totals.peak_rss_bytes = summarize({total_rss});
  RowFigures stage;
  stage.path = "load/train";
  stage.peak_rss_bytes = summarize({stage_rss});
  s.stages.push_back(stage);
  return s;
}

}  // namespace

TEST_CASE("rank_settings: lowest peak RSS first, by the stage's when given", "[suggest]") {
  CompareResult result;
  result.stage_paths = {"load", "load/train"};
  result.subjects = {subject("glibc", "glibc", 300, 100), subject("glibc:A=1", "glibc", 200, 150),
                     subject("jemalloc", "jemalloc", 250, 120)};
  const Suggestions by_run = rank_settings(result, "");
  REQUIRE(by_run.ranked.size() == 3);
  CHECK(by_run.ranked[0].subject == "glibc:A=1");
  CHECK(by_run.ranked[1].subject == "jemalloc");
  CHECK(by_run.ranked[0].of_untuned == Approx(200.0 / 300.0));
  CHECK(by_run.ranked[1].of_untuned == Approx(1.0));
  const Suggestions by_stage = rank_settings(result, "train");  // a name naming one path
  CHECK(by_stage.stage == "load/train");
  CHECK(by_stage.ranked[0].subject == "glibc");
  CHECK(by_stage.ranked[2].subject == "glibc:A=1");
  CHECK(by_stage.ranked[2].stage_peak_rss_bytes == 150u);
  CHECK(suggestions_json(by_stage)["ranked"][0]["subject"] == "glibc");
  CHECK(render_suggestions_text(by_stage).find("glibc:A=1") != std::string::npos);
  CHECK_THROWS_AS(rank_settings(result, "nope"), std::invalid_argument);
}
