// The analysis on hand-made event streams whose figures are known exactly.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>
#include <tuple>

#include "reports/analysis/analyzer.h"
#include "reports/analysis/job_plan.h"
#include "reports/analysis/stage_rows.h"
#include "reports/render/text/text_report.h"
#include "tests/unit/trace_builder.h"

using memstage::testing::OneModuleList;
using memstage::testing::TraceBuilder;
namespace reports = memstage::reports;
namespace trace = memstage::trace;

namespace {

reports::Report analyze(TraceBuilder& b, const std::string& name, uint64_t max_kept_text_bytes = 1ull << 30) {
  const std::string path = memstage::testing::temp_trace_path("analyzer_" + name + ".mst");
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  options.max_kept_text_bytes = max_kept_text_bytes;
  return reports::analyze({path}, std::nullopt, options);
}

// A run's output folder, made anew and empty, for the tests that follow its traces.
std::string fresh_run_folder(const std::string& name) {
  const std::string dir = memstage::testing::temp_trace_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directory(dir);
  return dir;
}

// Writes a trace as its writer would in two goes: its first `first_bytes`, a pause in which
// the readers following the file see them, then the rest.
void write_with_pause(const std::string& path, const std::string& bytes, size_t first_bytes,
                      std::chrono::milliseconds pause) {
  FILE* f = fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  fwrite(bytes.data(), 1, first_bytes, f);
  fflush(f);
  std::this_thread::sleep_for(pause);
  fwrite(bytes.data() + first_bytes, 1, bytes.size() - first_bytes, f);
  fclose(f);
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

TEST_CASE("a stack holding only empty blocks at the peak is listed by its own stack") {
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20});
  b.time(1'000'000).alloc(0x1000, 0, 0).alloc(0x1010, 0, 0).alloc(0x2000, 64, 1).end(2'000'000);
  const auto r = analyze(b, "empty_blocks");
  REQUIRE(r.top_stacks_at_peak.size() == 2);
  CHECK(r.top_stacks_at_peak[0].bytes == 64);
  const reports::StackBytes& empty = r.top_stacks_at_peak[1];
  CHECK(empty.bytes == 0);
  CHECK(empty.blocks == 2);
  // Not the empty stack (once numbered 0, and resolved after the stack tree was let go).
  REQUIRE(empty.stack < r.stacks.size());
  CHECK(r.stacks[empty.stack].innermost != 0);
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

TEST_CASE("many stages: top stacks at each stage's peak and retained bytes, kept in order as events replay") {
  // One allocation info per stage (a size of its own), kept: walking every info at every
  // stage's peak would be quadratic, so the analysis keeps the stacks' live bytes ordered.
  constexpr int kStages = 300;
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20}).stage_name("step");
  b.alloc(0x100000, 1'000'000, 1);  // outside any stage, live throughout: the top stack
  for (int i = 0; i < kStages; ++i) {
    b.stage_begin(0, 10 + i).alloc(0x1000 + i * 0x100, 16 + i, 0);
    if (i % 2) b.free(0x1000 + (i - 1) * 0x100);  // frees the previous stage's block
    b.stage_end(10 + i);
  }
  b.end(1000);
  const auto r = analyze(b, "many_stages");
  REQUIRE(r.stages.size() == kStages);
  uint64_t stack0_live = 0;  // bytes of stack 0 live at each stage's peak (its allocation)
  for (int i = 0; i < kStages; ++i) {
    const auto& s = r.stages[i];
    INFO("stage " << i);
    stack0_live += 16 + i;
    if (i % 2) stack0_live -= 16 + (i - 1);
    // The peak is right after the stage's allocation, before it frees the previous block.
    const uint64_t at_peak = stack0_live + (i % 2 ? 16 + (i - 1) : 0);
    CHECK(s.figures.peak_heap_bytes == 1'000'000 + at_peak);
    REQUIRE(s.top_stacks_at_peak.size() == 2);
    CHECK(s.top_stacks_at_peak[0].bytes == 1'000'000);
    CHECK(s.top_stacks_at_peak[1].bytes == at_peak);
    CHECK(s.retained_bytes == 16u + i);  // its block, freed (if at all) by the next stage
  }
}

// A loop of `steps` stages "step", each with a nested "inner": step keeps 100 bytes while
// inner allocates 10..16 bytes and frees them; step `peak_step`'s inner allocates 1 MB. Every
// 100th step leaks 7 bytes.
TraceBuilder& stage_loop(TraceBuilder& b, int steps, int peak_step) {
  b.process().stack({0x10}).stack({0x20}).stack({0x30}).stage_name("step").stage_name("inner");
  for (int i = 0; i < steps; ++i) {
    const uint64_t t = 10 + 4 * static_cast<uint64_t>(i);
    b.stage_begin(0, t).alloc(0x1000, 100, 0);
    b.stage_begin(1, t + 1).alloc(0x2000, i == peak_step ? 1'000'000 : 10 + i % 7, 1).free(0x2000);
    if (i % 100 == 0) b.alloc(0x100000 + i, 7, 2);
    b.stage_end(t + 2).free(0x1000).stage_end(t + 3);
  }
  return b.end(10 + 4 * static_cast<uint64_t>(steps));
}

TEST_CASE("past a thousand stage instances those sharing a path are grouped: sums exact, highest peaks on their own") {
  constexpr int kSteps = 10000, kPeakStep = 6789;
  TraceBuilder b;
  const auto r = analyze(stage_loop(b, kSteps, kPeakStep), "grouped_stages");
  REQUIRE(r.stage_grouping);
  CHECK(r.stage_grouping->instances == 2 * kSteps);
  // The first 100 instances, each path's highest peak, each path's other instances.
  REQUIRE(r.stages.size() == reports::StageRows::kFirstInstancesKept + 4);
  CHECK(r.stage_grouping->rows == r.stages.size());
  for (const char* path : {"step", "step/inner"}) {
    INFO(path);
    uint64_t instances = 0, allocations = 0, bytes = 0, leaked = 0, highest = 0;
    const reports::StageReport* group = nullptr;
    const reports::StageReport* worst = nullptr;
    for (const auto& s : r.stages) {
      if (s.path != path) continue;
      instances += s.instances;
      allocations += s.figures.allocations;
      bytes += s.figures.bytes_allocated;
      leaked += s.figures.leaked_bytes;
      if (s.instances > 1) group = &s;
      if (s.figures.peak_heap_bytes > highest) highest = s.figures.peak_heap_bytes, worst = &s;
    }
    CHECK(instances == kSteps);
    REQUIRE(group);
    REQUIRE(worst);
    CHECK(worst->instances == 1);
    CHECK(worst->figures.peak_heap_bytes == 1'000'100 + (kPeakStep / 100 + 1) * 7);
    CHECK(worst->start_s == Approx((10 + 4 * kPeakStep + (group->depth ? 1 : 0)) / 1e9));
    REQUIRE_FALSE(worst->top_stacks_at_peak.empty());
    CHECK(worst->top_stacks_at_peak[0].bytes == 1'000'000);
    // The group's peak is its own instances' highest, with that instance's stacks.
    // (step 9996: 16 bytes in inner, 100 leaked 7-byte blocks before it).
    CHECK(group->figures.peak_heap_bytes == 100 + 16 + 700);
    uint64_t held = 0;
    for (const auto& sb : group->top_stacks_at_peak) held += sb.bytes;
    CHECK(held == group->figures.peak_heap_bytes);
    CHECK(group->open_s == Approx((group->depth ? 1 : 3) * 1e-9 * group->instances));
    if (std::string(path) == "step") {
      CHECK(allocations == kSteps);
      CHECK(bytes == 100ull * kSteps);
      CHECK(leaked == 0);
    } else {
      CHECK(allocations == kSteps + kSteps / 100);
      CHECK(leaked == 7ull * kSteps / 100);
      CHECK(r.stages[group->parent].path == "step");
      CHECK(r.stages[group->parent].instances > 1);
    }
  }
  // Every figure keyed by stage names a row, each (stack, row) once.
  std::set<std::pair<uint32_t, int>> keys;
  for (const auto& f : r.stack_figures) {
    CHECK(f.stage < static_cast<int>(r.stages.size()));
    CHECK(keys.insert({f.stack, f.stage}).second);
  }
  for (const auto& l : r.leaks) CHECK(l.stage < static_cast<int>(r.stages.size()));
  for (const auto& p : r.timeline) CHECK(p.stage < static_cast<int>(r.stages.size()));
  uint64_t leaked_listed = 0;
  for (const auto& l : r.leaks) leaked_listed += l.bytes;
  CHECK(leaked_listed == 7ull * kSteps / 100);
  CHECK(r.leaks.size() == 2);  // the first 100 instances' leak and the group's
}

TEST_CASE("up to a thousand stage instances each is a row of its own") {
  TraceBuilder b;
  const auto r = analyze(stage_loop(b, 500, 7), "ungrouped_stages");
  CHECK_FALSE(r.stage_grouping);
  REQUIRE(r.stages.size() == 1000);
  for (const auto& s : r.stages) CHECK(s.instances == 1);
  CHECK(r.stages[15].figures.peak_heap_bytes == 1'000'100 + 7);
}

TEST_CASE("what a trace describes beyond the analysis's text budget stops it with one clear error") {
  // Stage paths: 64 levels of 4 KiB names make paths of up to 256 KiB each; the trace
  // that says so is a few hundred bytes of records per instance.
  const std::string long_name(4096, 'n');
  TraceBuilder deep;
  deep.process().stack({0x10}).stage_name(long_name);
  for (int i = 0; i < 64; ++i) deep.stage_begin(0, 10 + i);
  for (int i = 0; i < 64; ++i) deep.stage_end(100 + i);
  deep.end(1000);
  CHECK_THROWS_WITH(analyze(deep, "deep_paths", 1 << 20),
                    Catch::Contains("more than 1 MiB of stage paths") && Catch::Contains("too large to analyse"));
  CHECK(analyze(deep, "deep_paths_fit", 16 << 20).stages.size() == 64);  // 8.3 MiB of paths

  // Module lists: one list of a thousand modules, repeated.
  std::vector<std::string> paths;
  for (int i = 0; i < 1000; ++i) paths.push_back("/usr/lib/x86_64-linux-gnu/libmodule_" + std::to_string(i) + ".so");
  std::vector<trace::records::ModuleEntry> entries(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) entries[i].path = paths[i];
  trace::records::Modules modules;
  modules.modules.items = entries;
  TraceBuilder repeated;
  repeated.process().stack({0x10});
  for (int i = 0; i < 100; ++i) repeated.record(modules);
  repeated.end(1000);
  CHECK_THROWS_WITH(analyze(repeated, "repeated_modules", 4 << 20), Catch::Contains("of module lists"));
  CHECK_NOTHROW(analyze(repeated, "repeated_modules_fit", 64 << 20));
}

TEST_CASE("stats mode: a stage's own counters are its span's minus its children's") {
  TraceBuilder b;
  b.process(100, trace::Mode::kStats).stage_name("outer").stage_name("inner");
  b.record(trace::records::Counters{1, 0, 0, 0}).stage_begin(0, 2).record(trace::records::Counters{2, 10, 5, 1000});
  b.stage_begin(1, 3).record(trace::records::Counters{3, 10, 5, 1000}).record(trace::records::Counters{4, 30, 6, 3000}).stage_end(4);
  b.stage_begin(1, 5).record(trace::records::Counters{5, 30, 6, 3000}).record(trace::records::Counters{6, 31, 16, 3100}).stage_end(6);
  b.record(trace::records::Counters{7, 40, 20, 4000}).stage_end(7).end(8);
  const auto r = analyze(b, "stats_counters");
  REQUIRE(r.stages.size() == 3);
  CHECK(r.stages[0].figures.allocations == 40 - 20 - 1);
  CHECK(r.stages[0].figures.frees == 20 - 1 - 10);
  CHECK(r.stages[0].figures.bytes_allocated == 4000 - 2000 - 100);
  CHECK(r.stages[1].figures.allocations == 20);
  CHECK(r.stages[2].figures.frees == 10);
}

TEST_CASE("stage begins the tracer dropped past its limits are said in a warning") {
  TraceBuilder b;
  b.process().stack({0x10}).stage_name("a").stage_begin(0, 1);
  const auto depth = static_cast<uint64_t>(trace::StageLimit::kDepth);
  b.record(trace::records::StageLimitHit{2'000'000'000, depth, 256, 1});
  b.record(trace::records::StageLimitHit{3'000'000'000, depth, 256, 45});  // the total, at the end
  b.stage_end(4).end(5);
  const auto r = analyze(b, "stage_limit");
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("stages nested deeper than 256: 45 stage begins from 2.000 s on") != std::string::npos);
}

TEST_CASE("device memory: per-stage peaks and retained, handles apart from pointers, leaks, cache") {
  using memstage::trace::DeviceMemory;
  using memstage::trace::records::DeviceAlloc;
  using memstage::trace::records::DeviceCache;
  using memstage::trace::records::DeviceFree;
  const auto kind = [](DeviceMemory k) { return static_cast<uint64_t>(k); };
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20}).stage_name("load").stage_name("step");
  b.stage_begin(0, 10);
  b.record(DeviceAlloc{11, 0x7000, 1000, kind(DeviceMemory::kDevice), 0});
  // A handle with the same number as a pointer is another block.
  b.record(DeviceAlloc{12, 0x7000, 4000, kind(DeviceMemory::kPhysical), 1});
  b.record(DeviceCache{13, 8000, 1000});
  b.stage_begin(1, 14);
  b.record(DeviceAlloc{15, 0x9000, 300, kind(DeviceMemory::kAsync), 0});
  b.record(DeviceFree{16, 0x7000, kind(DeviceMemory::kPhysical)});  // live 1300
  b.record(DeviceCache{17, 9000, 1300});
  b.stage_end(18);
  b.record(DeviceFree{19, 0x9000, kind(DeviceMemory::kDevice)});  // cudaFree of an async block
  b.record(DeviceFree{20, 0x1234, kind(DeviceMemory::kDevice)});  // never allocated
  b.stage_end(21);
  b.end(30);
  const auto r = analyze(b, "device");
  REQUIRE(r.device.has_value());
  CHECK(r.device->totals.peak_bytes == 5300);
  CHECK(r.device->totals.peak_time_s == Approx(15e-9));
  CHECK(r.device->totals.allocations == 3);
  CHECK(r.device->totals.frees == 2);
  CHECK(r.device->totals.leaked_bytes == 1000);
  CHECK(r.device->unknown_frees == 1);
  REQUIRE(r.device->leaks.size() == 1);
  CHECK(r.device->leaks[0].bytes == 1000);
  CHECK(r.stages[r.device->leaks[0].stage].path == "load");
  REQUIRE(r.device->top_stacks_at_peak.size() == 2);
  CHECK(r.device->top_stacks_at_peak[0].bytes == 4000);
  CHECK(r.device->top_stacks_at_peak[1].bytes == 1300);
  const auto& load = *stage(r, "load").device;
  const auto& step = *stage(r, "load/step").device;
  CHECK(load.peak_bytes == 5300);
  CHECK(step.peak_bytes == 5300);  // 1000 + 4000 + 300, before the release
  CHECK(step.retained_bytes == 300);
  CHECK(load.retained_bytes == 1000);
  CHECK(load.leaked_bytes == 1000);
  CHECK(step.allocations == 1);
  REQUIRE(step.cache.has_value());
  CHECK(step.cache->reserved_bytes == 9000);
  CHECK(step.cache->allocated_bytes == 1300);
  REQUIRE(load.cache.has_value());
  CHECK(load.cache->peak_reserved_bytes == 9000);
}

TEST_CASE("device memory: the stacks held at each stage's device peak") {
  using memstage::trace::DeviceMemory;
  using memstage::trace::records::DeviceAlloc;
  using memstage::trace::records::DeviceFree;
  const auto device = static_cast<uint64_t>(DeviceMemory::kDevice);
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20}).stage_name("a").stage_name("b").stage_name("c");
  b.stage_begin(0, 10);
  b.record(DeviceAlloc{11, 0x7000, 100, device, 0});
  b.record(DeviceFree{12, 0x7000, device});
  b.stage_end(13);
  b.stage_begin(1, 14);
  b.record(DeviceAlloc{15, 0x8000, 50, device, 1});
  b.record(DeviceAlloc{16, 0x9000, 20, device, 0});
  b.record(DeviceFree{17, 0x9000, device});
  b.stage_end(18);
  b.stage_begin(2, 19);  // allocates nothing: its peak is what was live when it began
  b.stage_end(20);
  b.end(30);
  const auto r = analyze(b, "device_stage_stacks");
  const auto held = [&](const char* path) {
    std::vector<uint64_t> bytes;
    for (const auto& sb : stage(r, path).device->top_stacks_at_peak) bytes.push_back(sb.bytes);
    return bytes;
  };
  CHECK(held("a") == std::vector<uint64_t>{100});
  CHECK(held("b") == std::vector<uint64_t>{50, 20});
  CHECK(held("c") == std::vector<uint64_t>{50});
  CHECK(stage(r, "c").device->top_stacks_at_peak[0].stack == stage(r, "b").device->top_stacks_at_peak[0].stack);
  CHECK(r.device->top_stacks_at_peak.size() == 1);  // the run's peak: a's 100
}

TEST_CASE("no device memory: no device figures") {
  TraceBuilder b;
  b.process().stack({0x10}).stage_name("load").stage_begin(0, 1).alloc(0x1000, 10).stage_end(2).end(3);
  const auto r = analyze(b, "no_device");
  CHECK(!r.device.has_value());
  CHECK(!r.stages[0].device.has_value());
}

TEST_CASE("a trace read while it is written makes the report of the finished file") {
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20, 0x10}).stage_name("load");
  b.time(1'000'000).alloc(0x1000, 100, 0).chunk();
  b.stage_begin(0, 2'000'000).alloc(0x2000, 5000, 1).chunk();
  b.alloc(0x3000, 700, 1).free(0x3000).chunk();
  b.stage_end(3'000'000).free(0x2000).alloc(0x4000, 10, 0).chunk();
  b.end(4'000'000);
  const std::string bytes = b.bytes();
  // A run's folder, where a second process's trace appears once the first is under way.
  const std::string dir = fresh_run_folder("analyzer_being_written");
  const std::string path = dir + "/trace.100.mst", child_path = dir + "/trace.101.mst";
  reports::AnalysisOptions options;
  options.symbolize = false;

  // The reader starts before the files exist, as memstage run's does before its program's
  // tracer has created one, and follows each as it grows chunk by chunk.
  reports::TraceBeingWritten ahead(dir, options);
  const auto write_slowly = [&](const std::string& to, const std::function<void(size_t)>& after_bytes) {
    FILE* f = fopen(to.c_str(), "wb");
    for (size_t at = 0; at < bytes.size(); at += 11) {
      fwrite(bytes.data() + at, 1, std::min<size_t>(11, bytes.size() - at), f);
      fflush(f);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      after_bytes(at);
    }
    fclose(f);
  };
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::thread child;
    write_slowly(path, [&](size_t at) {
      if (at == 11 * 20) child = std::thread(write_slowly, child_path, [](size_t) {});
    });
    child.join();
  });
  writer.join();
  CHECK(ahead.traces_followed() == 2);
  const auto followed = reports::analyze({path, child_path}, std::nullopt, options, &ahead);
  const auto plain = reports::analyze({path, child_path}, std::nullopt, options);
  CHECK(followed.totals.peak_heap_bytes == 5800);
  CHECK(followed.totals.leaked_bytes == 110);
  CHECK(followed.warnings.empty());
  REQUIRE(followed.stages.size() == 1);
  CHECK(followed.stages[0].figures.peak_heap_bytes == plain.stages[0].figures.peak_heap_bytes);
  CHECK(reports::render_text(followed) == reports::render_text(plain));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a trace's modules opened while it is written: the report of the finished file") {
  // A module that is a real ELF file (this test's own), listed in the trace's first chunk.
  const std::string module = std::filesystem::read_symlink("/proc/self/exe").string();
  const OneModuleList modules(module, 0x1000, 0x1000000);
  TraceBuilder b;
  b.process().record(modules.record()).stack({0x1100, 0x1200}).chunk();
  b.alloc(0x7000, 64, 0).chunk();
  b.end(1'000'000);
  const std::string bytes = b.bytes();
  const std::string dir = fresh_run_folder("analyzer_warmed_modules");
  const std::string path = dir + "/trace.100.mst";
  reports::AnalysisOptions options;
  options.symbolize = true;

  // The warmer looks at the module lists every 100 ms: all but the last chunk's end, a
  // pause it sees them in, then the rest.
  reports::TraceBeingWritten ahead(dir, options, true);
  write_with_pause(path, bytes, bytes.size() - 4, std::chrono::milliseconds(300));
  const auto followed = reports::analyze({path}, std::nullopt, options, &ahead);
  const auto plain = reports::analyze({path}, std::nullopt, options);
  REQUIRE(followed.frames.size() == plain.frames.size());
  for (size_t i = 0; i < plain.frames.size(); ++i) {
    CHECK(followed.frames[i].function == plain.frames[i].function);
    CHECK(followed.frames[i].file == plain.frames[i].file);
    CHECK(followed.frames[i].line == plain.frames[i].line);
    CHECK(followed.frames[i].module == module);
  }
  CHECK(reports::render_text(followed) == reports::render_text(plain));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a trace's stacks resolved while it is written: a library listed after a stack that names it waits for its list") {
  using trace::records::ModuleEntry;
  using trace::records::Segment;
  const Segment low[] = {{0x1000, 0x2000}}, high[] = {{0x5000, 0x6000}};
  ModuleEntry libx, liby;
  libx.path = "/lib/libx.so";
  libx.segments.items = low;
  liby.path = "/lib/liby.so";  // dlopen'ed in the batch that defined the second stack
  liby.segments.items = high;
  std::vector<ModuleEntry> first{libx}, second{libx, liby};
  const auto modules_record = [](std::vector<ModuleEntry>& entries) {
    trace::records::Modules m;
    m.modules.items = entries;
    return m;
  };
  TraceBuilder b;
  b.process().record(modules_record(first)).stack({0x1100, 0x1010}).stack({0x5100, 0x1100, 0x1010});
  b.alloc(0x10000, 300, 0).alloc(0x20000, 200, 1).chunk();
  const size_t first_chunk_bytes = b.bytes().size();
  b.record(modules_record(second)).stack({0x5200, 0x1010}).alloc(0x30000, 100, 2).chunk();
  b.end(1'000'000);
  const std::string bytes = b.bytes();
  const std::string dir = fresh_run_folder("analyzer_resolved_while_read");
  const std::string path = dir + "/trace.100.mst";
  reports::AnalysisOptions options;
  options.symbolize = false;

  reports::TraceBeingWritten ahead(dir, options, true);
  // The first chunk read, and its stacks resolved, before the second is written.
  write_with_pause(path, bytes, first_chunk_bytes, std::chrono::milliseconds(300));
  const auto followed = reports::analyze({path}, std::nullopt, options, &ahead);
  const auto plain = reports::analyze({path}, std::nullopt, options);
  // All five stacks, the root's among them: the second once liby's list was read.
  CHECK(ahead.stacks_resolved_early() == 5);
  CHECK(reports::render_text(followed) == reports::render_text(plain));
  const auto frames_of_leaks = [](const reports::Report& r) {
    std::vector<std::string> out;
    for (const auto& leak : r.leaks) {
      for (const auto f : r.frames_of(r.stacks.at(leak.stack))) {
        out.push_back(r.frame(f).module + "+" + std::to_string(r.frame(f).module_offset));
      }
    }
    return out;
  };
  CHECK(frames_of_leaks(followed) == frames_of_leaks(plain));
  REQUIRE(followed.leaks.size() == 3);
  const auto& leak = followed.leaks[1];
  REQUIRE(leak.bytes == 200);
  CHECK(followed.frame(*followed.frames_of(followed.stacks.at(leak.stack)).begin()).module == "/lib/liby.so");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the run so far: each chunk's figures as it is written, the final report's at its end") {
  const std::string dir = fresh_run_folder("analyzer_so_far");
  const std::string path = dir + "/trace.100.mst";
  reports::AnalysisOptions options;
  options.symbolize = false;
  reports::TraceBeingWritten ahead(dir, options);
  CHECK(!ahead.so_far(options));  // no trace yet

  FILE* f = fopen(path.c_str(), "wb");
  size_t written = 0;
  // Writes what `b` holds past what was written, then waits (5 s at most) for the run so
  // far to show it.
  const auto write_and_wait = [&](TraceBuilder& b, uint64_t peak_heap_bytes) {
    const std::string bytes = b.bytes();
    fwrite(bytes.data() + written, 1, bytes.size() - written, f);
    fflush(f);
    written = bytes.size();
    std::optional<reports::Report> r;
    for (int tries = 0; tries < 500; ++tries) {
      r = ahead.so_far(options);
      if (r && r->totals.peak_heap_bytes == peak_heap_bytes) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(r);
    return *r;
  };
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20, 0x10}).stage_name("load");
  b.time(1'000'000).alloc(0x1000, 100, 0);
  reports::Report r = write_and_wait(b, 100);
  CHECK(r.totals.peak_heap_bytes == 100);
  CHECK(r.stages.empty());
  REQUIRE(r.leaks.size() == 1);  // held now
  CHECK(r.leaks[0].bytes == 100);

  b.stage_begin(0, 2'000'000).alloc(0x2000, 5000, 1).alloc(0x3000, 700, 1);
  r = write_and_wait(b, 5800);
  REQUIRE(r.stages.size() == 1);
  CHECK(r.stages[0].path == "load");
  CHECK(!r.stages[0].closed);  // open so far
  CHECK(r.stages[0].figures.peak_heap_bytes == 5800);
  REQUIRE(r.leaks.size() == 2);
  CHECK(r.leaks[0].bytes == 5700);  // the stack holding most first
  CHECK(r.leaks[0].blocks == 2);

  b.free(0x3000).stage_end(3'000'000).free(0x2000).alloc(0x4000, 10, 0).end(4'000'000);
  r = write_and_wait(b, 5800);
  fclose(f);
  for (int tries = 0; tries < 500 && r.leaks.size() != 1; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r = *ahead.so_far(options);
  }
  const auto plain = reports::analyze({path}, std::nullopt, options);
  CHECK(r.totals.peak_heap_bytes == plain.totals.peak_heap_bytes);
  CHECK(r.totals.peak_rss_bytes == plain.totals.peak_rss_bytes);
  REQUIRE(r.stages.size() == 1);
  CHECK(r.stages[0].closed);
  CHECK(r.stages[0].figures.peak_heap_bytes == plain.stages[0].figures.peak_heap_bytes);
  REQUIRE(r.leaks.size() == 1);
  CHECK(r.leaks[0].bytes == plain.totals.leaked_bytes);
  REQUIRE(r.processes.size() == 1);
  CHECK(r.processes[0].pid == plain.processes[0].pid);
  // The analysis takes the traces after: the same report as without the views.
  ahead.writer_ended();
  const auto followed = reports::analyze({path}, std::nullopt, options, &ahead);
  CHECK(reports::render_text(followed) == reports::render_text(plain));
  std::filesystem::remove_all(dir);
}

// The follower's run so far with every stack, once `read_enough` says it has read the
// trace (tries for 5 s at most).
template <typename ReadEnough>
std::optional<reports::Report> every_stack_so_far(reports::TraceBeingWritten& ahead, const reports::AnalysisOptions& options,
                                                  ReadEnough read_enough) {
  std::optional<reports::Report> r;
  for (int tries = 0; tries < 500 && (!r || !read_enough(*r)); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r = ahead.so_far(options, reports::SoFarStacks::kEvery);
  }
  return r;
}

TEST_CASE("the run so far with every stack: what the analysis says of its sites and leaks at the end") {
  const std::string dir = fresh_run_folder("analyzer_so_far_every");
  const std::string path = dir + "/trace.100.mst";
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20, 0x10}).stack({0x30, 0x10}).stage_name("load");
  b.time(1'000'000).alloc(0x1000, 100, 0).alloc(0x1100, 40, 2).free(0x1100);
  b.stage_begin(0, 2'000'000).alloc(0x2000, 5000, 1).alloc(0x3000, 700, 1).alloc(0x4000, 30, 0);
  b.free(0x3000).stage_end(3'000'000).alloc(0x5000, 10, 0).end(4'000'000);
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  reports::TraceBeingWritten ahead(dir, options);
  const std::optional<reports::Report> r =
      every_stack_so_far(ahead, options, [](const reports::Report& so_far) { return so_far.leaks.size() == 3; });
  REQUIRE(r);
  const auto plain = reports::analyze({path}, std::nullopt, options);
  // Per (stage row, allocations, bytes): stack numbers differ between the two reports.
  const auto figures = [](const reports::Report& report) {
    std::vector<std::tuple<int, uint64_t, uint64_t>> out;
    for (const auto& f : report.stack_figures) out.emplace_back(f.stage, f.allocations, f.bytes_allocated);
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto held = [](const reports::Report& report) {
    std::vector<std::tuple<int, uint64_t, uint64_t>> out;
    for (const auto& l : report.leaks) out.emplace_back(l.stage, l.bytes, l.blocks);
    std::sort(out.begin(), out.end());
    return out;
  };
  CHECK(figures(*r) == figures(plain));
  CHECK(figures(*r).size() == 4);  // stacks 0 and 1 in "load", 0 and 2 outside
  CHECK(held(*r) == held(plain));  // held now at the end: the leaks, per stack and stage row
  CHECK(r->leaks[0].bytes == 5000);  // largest first
  CHECK(r->totals.leaked_bytes == plain.totals.leaked_bytes);
  CHECK(r->totals.leaked_blocks == plain.totals.leaked_blocks);
  std::filesystem::remove_all(dir);
}

// Aggregate mode's site counts stay with the first pass until the trace ends: the run so
// far takes them from there.
TEST_CASE("the run so far of an aggregate trace: its sites' counts and what they hold") {
  const std::string dir = fresh_run_folder("analyzer_so_far_aggregate");
  const std::string path = dir + "/trace.100.mst";
  TraceBuilder b;
  b.process(100, trace::Mode::kAggregate).stack({0x10}).stack({0x20, 0x10});
  const auto first = static_cast<uint32_t>(b.stack_node(0));
  const auto second = static_cast<uint32_t>(b.stack_node(1));
  b.record(trace::records::AggSite{first, 0, 3, 300, 1, 100, 1});
  b.record(trace::records::AggSite{second, 0, 1, 64, 0, 0, 0});
  b.record(trace::records::AggSnapshot{1000, 4, 3, 364, 1});
  b.record(trace::records::AggSite{first, 0, 2, 250, 0, 150, 2});
  b.record(trace::records::AggSnapshot{2000, 6, 4, 614, 1});
  b.end(3000);
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  reports::TraceBeingWritten ahead(dir, options);
  const std::optional<reports::Report> r = every_stack_so_far(ahead, options, [](const reports::Report& so_far) {
    return so_far.leaks.size() == 1 && so_far.stack_figures.size() == 2;
  });
  REQUIRE(r);
  const auto plain = reports::analyze({path}, std::nullopt, options);
  const auto figures = [](const reports::Report& report) {
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> out;
    for (const auto& f : report.stack_figures) out.emplace_back(f.allocations, f.bytes_allocated, f.temporary_allocations);
    std::sort(out.begin(), out.end());
    return out;
  };
  CHECK(figures(*r) == figures(plain));
  CHECK(figures(plain) == std::vector<std::tuple<uint64_t, uint64_t, uint64_t>>{{1, 64, 0}, {5, 550, 1}});
  REQUIRE(r->leaks.size() == 1);
  CHECK(r->leaks[0].bytes == 150);
  CHECK(r->leaks[0].blocks == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("traces to be read ahead that never appear leave the analysis as it was") {
  TraceBuilder b;
  b.process().stack({0x10}).alloc(0x1000, 64, 0).end(1'000'000);
  reports::AnalysisOptions options;
  options.symbolize = false;
  const std::string dir = fresh_run_folder("analyzer_never_written");
  reports::TraceBeingWritten ahead(dir, options);
  ahead.writer_ended();
  CHECK(ahead.traces_followed() == 0);
  const std::string path = memstage::testing::temp_trace_path("analyzer_other.mst");
  b.write(path);
  const auto r = reports::analyze({path}, std::nullopt, options, &ahead);
  CHECK(r.totals.peak_heap_bytes == 64);
  std::filesystem::remove_all(dir);
}

TEST_CASE("pass two replays pass one's log of the events or reads the trace again: the same stacks at the peaks") {
  TraceBuilder b;
  b.process().stack({0x10}).stack({0x20}).stack({0x30}).stage_name("grow");
  b.time(1'000'000).alloc(0x1000, 100, 0).alloc(0x2000, 300, 1);
  b.stage_begin(0, 2'000'000).alloc(0x3000, 1000, 2).alloc(0x4000, 50, 0);  // the stage's and the run's peak: 1450
  b.free(0x3000).stage_end(3'000'000);
  b.alloc(0x5000, 200, 2).free(0x5000).free(0x1000).end(4'000'000);
  const std::string path = memstage::testing::temp_trace_path("analyzer_event_log.mst");
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  const auto logged = reports::analyze({path}, std::nullopt, options);
  for (const size_t bound : {size_t{0}, size_t{8}}) {  // no log; a log cut short by its bound
    INFO("at most " << bound << " bytes of events logged");
    options.max_event_log_bytes = bound;
    const auto read_again = reports::analyze({path}, std::nullopt, options);
    CHECK(reports::render_text(read_again) == reports::render_text(logged));
    REQUIRE(read_again.top_stacks_at_peak.size() == logged.top_stacks_at_peak.size());
    for (size_t i = 0; i < logged.top_stacks_at_peak.size(); ++i) {
      CHECK(read_again.top_stacks_at_peak[i].bytes == logged.top_stacks_at_peak[i].bytes);
    }
  }
  REQUIRE(logged.top_stacks_at_peak.size() == 3);
  CHECK(logged.top_stacks_at_peak[0].bytes == 1000);
  CHECK(logged.top_stacks_at_peak[1].bytes == 300);
  CHECK(logged.top_stacks_at_peak[2].bytes == 150);
  CHECK(logged.totals.peak_heap_bytes == 1450);
}

TEST_CASE("a module changed after the trace was recorded is named in a warning") {
  // The trace's process started in November 2023 (TraceBuilder) and ran 1 ms; the module's
  // file is written now.
  const std::string module = memstage::testing::temp_trace_path("rebuilt_module.so");
  FILE* f = fopen(module.c_str(), "wb");
  fputs("not an ELF file: symbolization finds nothing in it", f);
  fclose(f);
  const OneModuleList modules(module, 0x1000, 0x2000);
  TraceBuilder b;
  b.process().record(modules.record()).stack({0x1100, 0x1200}).alloc(0x7000, 64, 0).end(1'000'000);
  const std::string path = memstage::testing::temp_trace_path("analyzer_rebuilt_module.mst");
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = true;
  const auto warned = [&] {
    const auto r = reports::analyze({path}, std::nullopt, options);
    return std::any_of(r.warnings.begin(), r.warnings.end(), [&](const std::string& w) {
      return w.find(module) != std::string::npos && w.find("changed after the trace was recorded") != std::string::npos;
    });
  };
  CHECK(warned());

  // The same file as it was before the run: no warning.
  const timespec before_run[2] = {{1'600'000'000, 0}, {1'600'000'000, 0}};  // September 2020
  REQUIRE(utimensat(AT_FDCWD, module.c_str(), before_run, 0) == 0);
  CHECK_FALSE(warned());
  // Without symbolization frames are module + offset, which a rebuild does not change.
  REQUIRE(utimensat(AT_FDCWD, module.c_str(), nullptr, 0) == 0);
  options.symbolize = false;
  CHECK_FALSE(warned());
}

TEST_CASE("several traces are read at once, and reported as if read in turn") {
  // Six processes, each with its own peak, and a file that is no trace among them.
  reports::AnalysisOptions options;
  options.symbolize = false;
  std::vector<std::string> paths;
  for (uint64_t p = 0; p < 6; ++p) {
    TraceBuilder b;
    b.process(100 + p).stack({0x10 + p}).time(1'000'000);
    for (uint64_t i = 0; i < 1000; ++i) b.alloc(0x10000 + i * 1024, 100 + p, 0);
    for (uint64_t i = 0; i < 1000; ++i) b.free(0x10000 + i * 1024);
    b.end(2'000'000);
    paths.push_back(memstage::testing::temp_trace_path("analyzer_at_once_" + std::to_string(p) + ".mst"));
    b.write(paths.back());
    if (p == 2) {
      paths.push_back(memstage::testing::temp_trace_path("analyzer_at_once_not_a_trace.mst"));
      FILE* f = fopen(paths.back().c_str(), "wb");
      REQUIRE(f);
      fputs("not a trace", f);
      fclose(f);
    }
  }
  const auto first = reports::analyze(paths, std::nullopt, options);
  REQUIRE(first.processes.size() == 6);
  for (uint64_t p = 0; p < 6; ++p) {
    CHECK(first.processes[p].pid == 100 + p);
    CHECK(first.processes[p].peak_heap_bytes == 1000 * (100 + p));
  }
  CHECK(std::count_if(first.warnings.begin(), first.warnings.end(), [](const std::string& w) {
          return w.find("analyzer_at_once_not_a_trace.mst is not a memstage trace: skipped") != std::string::npos;
        }) == 1);
  // However the reads interleave, the same report.
  for (int round = 0; round < 5; ++round) {
    CHECK(reports::render_text(reports::analyze(paths, std::nullopt, options)) == reports::render_text(first));
  }
}

TEST_CASE("a trace whose process ended makes room to follow the next; one written on after its exec is read again") {
  reports::AnalysisOptions options;
  options.symbolize = false;
  const std::string dir = fresh_run_folder("analyzer_followed_in_turn");
  reports::TraceBeingWritten ahead(dir, options);

  // The first process exec's and its exec fails: it writes on, after a pause, in the same
  // file. Its follower stops at the exec record.
  TraceBuilder exec_failed;
  exec_failed.process(300).stack({0x10}).alloc(0x1000, 64, 0);
  exec_failed.record(trace::records::Exec{1'000'000, "/no/such/program"}).chunk();
  exec_failed.alloc(0x2000, 4096, 0).end(2'000'000);
  const std::string bytes = exec_failed.bytes();
  trace::ChunkHeader first{};
  memcpy(&first, bytes.data() + sizeof(trace::FileHeader), sizeof(first));
  const size_t first_end = sizeof(trace::FileHeader) + sizeof(first) + first.compressed_bytes;
  const std::string exec_path = dir + "/trace.300.mst";
  FILE* f = fopen(exec_path.c_str(), "wb");
  REQUIRE(f);
  fwrite(bytes.data(), 1, first_end, f);
  fflush(f);

  // Then forty short processes, one after another: more than the 16 followed at once.
  std::vector<std::string> paths{exec_path};
  for (uint64_t p = 0; p < 40; ++p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    TraceBuilder b;
    b.process(400 + p).stack({0x20}).alloc(0x1000, 100 + p, 0).end(1'000'000);
    paths.push_back(dir + "/trace." + std::to_string(400 + p) + ".mst");
    b.write(paths.back());
  }
  fwrite(bytes.data() + first_end, 1, bytes.size() - first_end, f);
  fclose(f);

  CHECK(ahead.traces_followed() > 16);
  const auto followed = reports::analyze(paths, std::nullopt, options, &ahead);
  const auto plain = reports::analyze(paths, std::nullopt, options);
  CHECK(followed.totals.peak_heap_bytes == 64 + 4096);  // what the exec'ing process wrote on is in
  CHECK(reports::render_text(followed) == reports::render_text(plain));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a temporary record counts as its allocation and its free, as kAlloc then kFreeLast") {
  const auto build = [](bool as_one_record) {
    TraceBuilder b;
    b.process().stack({0x10}).stack({0x20}).stage_name("work");
    b.time(1'000'000).alloc(0x1000, 100, 0).stage_begin(0, 2'000'000);
    if (as_one_record) {
      b.temporary(5000, 1);
    } else {
      b.alloc(0x2000, 5000, 1).free(0x2000);
    }
    b.alloc(0x3000, 300, 1).stage_end(3'000'000).end(4'000'000);
    return b;
  };
  TraceBuilder one = build(true), two = build(false);
  const auto temporary = analyze(one, "temporary_record");
  const auto pair = analyze(two, "alloc_free_last");
  CHECK(temporary.totals.peak_heap_bytes == 5100);  // the temporary was live for an instant
  CHECK(temporary.totals.temporary_allocations == 1);
  CHECK(temporary.totals.allocations == 3);
  CHECK(temporary.totals.frees == 1);
  CHECK(reports::render_text(temporary) == reports::render_text(pair));
}

TEST_CASE("a job of many processes: its timeline stays within a bound of figures, its peak exact") {
  // 300 processes, each allocating 40 blocks at its own instants: 12,000 instants of the
  // job's heap, every point holding 300 processes' heaps.
  constexpr int kProcesses = 300, kBlocks = 40;
  std::vector<std::string> paths;
  for (int p = 0; p < kProcesses; ++p) {
    TraceBuilder b;
    b.process(1000 + p).stack({0x10});
    for (int i = 0; i < kBlocks; ++i) {
      const uint64_t t_ns = 1'000'000 + (p * kBlocks + i) * 10'000ull;
      b.time(t_ns);
      b.alloc(0x1000 + i * 0x100, 100);
      b.rss(t_ns, 4096 * (i + 1));
    }
    b.end(1'000'000 + (kProcesses * kBlocks + 1) * 10'000ull);
    paths.push_back(memstage::testing::temp_trace_path("analyzer_many_" + std::to_string(p) + ".mst"));
    b.write(paths.back());
  }
  reports::AnalysisOptions options;
  options.symbolize = false;
  const reports::Report r = reports::analyze(paths, std::nullopt, options);
  REQUIRE(r.processes.size() == kProcesses);
  size_t figures = 0;
  for (const auto& point : r.job.timeline) figures += point.process_heap_bytes.size();
  INFO("figures " << figures << ", points " << r.job.timeline.size());
  CHECK(figures <= reports::kMaxJobTimelineValues + 2 * kProcesses);  // 600,000 without the bound
  CHECK(r.job.timeline.size() >= reports::kMinJobTimelinePoints / 2);
  CHECK(r.job.peak_heap_bytes == uint64_t{kProcesses} * kBlocks * 100);  // none frees: all live at the end
  for (const auto& path : paths) std::remove(path.c_str());
}

// The first pass keeps a site's counts in 4 bytes each and hands them to the sites' list
// before they would wrap: the figures are the records' sums all the same.
TEST_CASE("an aggregate site's counts past 32 bits add up as the records say") {
  const std::string dir = fresh_run_folder("analyzer_agg_wide_counts");
  const std::string path = dir + "/trace.100.mst";
  TraceBuilder b;
  b.process(100, trace::Mode::kAggregate).stack({0x10});
  const auto site = static_cast<uint32_t>(b.stack_node(0));
  const uint64_t three_billion = 3'000'000'000;
  b.record(trace::records::AggSite{site, 0, three_billion, 10, three_billion - 1, 64, 1});
  b.record(trace::records::AggSnapshot{1000, three_billion, 0, 10, three_billion - 1});
  b.record(trace::records::AggSite{site, 0, three_billion, 20, 2, 64, 1});  // past 2^32 together
  b.record(trace::records::AggSite{site, 0, 5'000'000'000, 30, 1, 64, 1});  // past 2^32 alone
  b.record(trace::records::AggSite{site, 0, 1, 40, 0, 128, 2});
  b.record(trace::records::AggSnapshot{2000, 11'000'000'001, 0, 100, three_billion + 2});
  b.end(3000);
  b.write(path);
  reports::AnalysisOptions options;
  options.symbolize = false;
  const auto r = reports::analyze({path}, std::nullopt, options);
  REQUIRE(r.stack_figures.size() == 1);
  CHECK(r.stack_figures[0].allocations == 11'000'000'001);
  CHECK(r.stack_figures[0].bytes_allocated == 100);
  CHECK(r.stack_figures[0].temporary_allocations == three_billion + 2);
  REQUIRE(r.leaks.size() == 1);
  CHECK(r.leaks[0].bytes == 128);
  CHECK(r.leaks[0].blocks == 2);
  std::filesystem::remove_all(dir);
}
