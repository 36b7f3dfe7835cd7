// Figures and words of the report on hand-made traces: what is memory, which moment a
// figure describes, the tracer's share, how each process ended, what was not measured.
#include <catch2/catch.hpp>

#include "reports/analysis/analyzer.h"
#include "reports/render/text/text_report.h"
#include "tests/unit/trace_builder.h"

using memstage::testing::TraceBuilder;
namespace reports = memstage::reports;
namespace records = memstage::trace::records;

namespace {

constexpr uint64_t kMiB = 1 << 20;

std::string write_trace(TraceBuilder& b, const std::string& name) {
  const std::string path = memstage::testing::temp_trace_path("figures_" + name + ".mst");
  b.write(path);
  return path;
}

reports::Report analyze(const std::vector<std::string>& paths, const std::optional<reports::RunInfo>& run = {}) {
  reports::AnalysisOptions options;
  options.symbolize = false;
  return reports::analyze(paths, run, options);
}

bool has_warning(const reports::Report& r, const std::string& part) {
  for (const auto& w : r.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("reserved address space is not memory until mprotect opens it") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.record(records::MmapReserved{0x100000000, 1024 * kMiB, 0});             // PROT_NONE / MAP_NORESERVE
  b.record(records::Mprotect{0x100000000 + 4 * kMiB, kMiB, 1});              // 1 MiB made writable
  b.record(records::Mprotect{0x100000000 + 4 * kMiB + kMiB / 2, kMiB, 1});   // half of it again, half beyond
  b.record(records::Mprotect{0x100000000 + 4 * kMiB, kMiB / 4, 0});          // a quarter closed again
  b.record(records::Mprotect{0x900000000, kMiB, 1});                         // not a mapping the trace knows
  b.record(records::Mmap{0x200000000, 2 * kMiB, 0});                         // an ordinary anonymous mapping
  b.record(records::Munmap{0x100000000, 1024 * kMiB});
  b.end(1);
  const auto r = analyze({write_trace(b, "reserved")});
  // At the highest: 1.5 MiB opened, 0.25 MiB closed, then 2 MiB mapped: 3.25 MiB.
  CHECK(r.totals.mmap_peak_bytes == 3 * kMiB + kMiB / 4);
}

TEST_CASE("the run's RSS breakdown is the allocator sample at the highest heap, with its moment") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.record(records::AllocatorStats{0, 0, 128 * 1024, 0});  // the start: nothing live
  b.time(1'000'000);
  for (uint64_t i = 0; i < 64; ++i) b.alloc(0x10000000 + i * kMiB, kMiB);
  b.rss(2'000'000, 70 * kMiB, 5 * kMiB);
  b.record(records::AllocatorStats{2'000'000, 64 * kMiB, 66 * kMiB, 0});  // at the heap's high
  b.time(3'000'000);
  for (uint64_t i = 0; i < 64; ++i) b.free(0x10000000 + i * kMiB);
  b.record(records::AllocatorStats{4'000'000, 0, 60 * kMiB, 0});  // the exit: all free, still resident
  b.end(4'000'000);
  const auto r = analyze({write_trace(b, "breakdown")});
  CHECK(r.totals.peak_heap_bytes == 64 * kMiB);
  CHECK_FALSE(r.totals.rss_breakdown.estimated);
  CHECK(r.totals.rss_breakdown.t_s == Approx(0.002));
  CHECK(r.totals.rss_breakdown.live_bytes == 64 * kMiB);
  CHECK(r.totals.fragmentation.ratio == Approx(1.0 - 64.0 / 66.0));
  CHECK(reports::render_text(r).find("fragmentation 3.0% (2.00 MiB free of 66.0 MiB the allocator holds) at 0.002 s") != std::string::npos);
}

TEST_CASE("a program with no stages and no sample near its peak does not report its start's fragmentation") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.record(records::AllocatorStats{0, 0, 128 * 1024, 0});  // the start: live 0 of 128 KiB, "100 %"
  b.time(1'000'000).alloc(0x1000, 512 * 1024);
  b.rss(1'000'000, 8 * kMiB, 0);
  b.end(2'000'000);
  const auto r = analyze({write_trace(b, "start_sample")});
  CHECK(r.totals.rss_breakdown.estimated);  // said so, at the peak
  CHECK(r.totals.rss_breakdown.t_s == Approx(r.totals.peak_heap_time_s));
  CHECK(r.totals.rss_breakdown.live_bytes == 512 * 1024);
  CHECK(r.totals.fragmentation.ratio < 0.99);
}

TEST_CASE("a program with no heap: its fragmentation is not headlined, the few bytes it describes are said") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.record(records::AllocatorStats{0, 0, 132 * 1024, 0});
  b.end(1'000'000);
  const auto r = analyze({write_trace(b, "no_heap")});
  CHECK(r.totals.fragmentation.ratio == Approx(1.0));
  const std::string text = reports::render_text(r);
  CHECK(text.find("fragmentation none to speak of: 132 KiB free of 132 KiB the allocator holds") != std::string::npos);
  CHECK(text.find("100.0%") == std::string::npos);
}

TEST_CASE("fragmentation is headlined from 1 MiB free in the allocator") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.record(records::AllocatorStats{0, 0, 2 * kMiB, 0});
  b.end(1'000'000);
  const auto r = analyze({write_trace(b, "some_heap")});
  CHECK(reports::render_text(r).find("fragmentation 100.0% (2.00 MiB free of 2.00 MiB the allocator holds)") !=
        std::string::npos);
}

TEST_CASE("the tracer's own memory is apart from the program's RSS") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.rss(1'000'000, 100 * kMiB, 10 * kMiB);
  b.rss(2'000'000, 300 * kMiB, 48 * kMiB);
  b.rss(3'000'000, 280 * kMiB, 20 * kMiB);  // the program's own highest: 260 MiB
  b.end(3'000'000);
  const auto r = analyze({write_trace(b, "tracer_share")});
  CHECK(r.totals.peak_rss_bytes == 300 * kMiB);
  CHECK(r.totals.peak_program_rss_bytes == 260 * kMiB);
  CHECK(r.totals.tracer_peak_bytes == 48 * kMiB);
  bool timeline_has_tracer = false;
  for (const auto& p : r.timeline) timeline_has_tracer |= p.tracer_bytes == 48 * kMiB && p.rss_bytes == 300 * kMiB;
  CHECK(timeline_has_tracer);
  const std::string text = reports::render_text(r);
  CHECK(text.find("the program's own 260 MiB") != std::string::npos);
  CHECK(text.find("the tracer's own memory up to 48.0 MiB") != std::string::npos);
}

TEST_CASE("a process replaced by exec is not reported as killed; one with no end record is") {
  TraceBuilder parent;
  parent.process(10).end(5'000'000);
  TraceBuilder before_exec;
  before_exec.process(11).time(1'000'000).record(records::Exec{1'000'000, "/usr/bin/cc1plus"});
  TraceBuilder after_exec;
  after_exec.process(11).end(2'000'000);
  TraceBuilder killed;
  killed.process(12).time(1'000'000);
  const auto r = analyze({write_trace(parent, "exec_parent"), write_trace(before_exec, "exec_before"),
                          write_trace(after_exec, "exec_after"), write_trace(killed, "exec_killed")});
  REQUIRE(r.processes.size() == 4);
  int exec_count = 0, unknown_count = 0;
  for (const auto& p : r.processes) {
    if (p.ended == "exec") {
      ++exec_count;
      CHECK(p.pid == 11);
      CHECK(p.exec_path == "/usr/bin/cc1plus");
    }
    if (p.ended == "unknown") {
      ++unknown_count;
      CHECK(p.pid == 12);
    }
  }
  CHECK(exec_count == 1);
  CHECK(unknown_count == 1);
  CHECK_FALSE(has_warning(r, "exec_before"));
  CHECK(has_warning(r, "exec_killed.mst has no end record: the process was killed"));
  // The text summary names every process with its peaks, and how each ended.
  const std::string text = reports::render_text(r);
  CHECK(text.find("processes (4") != std::string::npos);
  CHECK(text.find("exec'd cc1plus") != std::string::npos);
  CHECK(text.find("killed (no end record)") != std::string::npos);
}

TEST_CASE("a failed exec is followed by the process's own end") {
  TraceBuilder b;
  b.process(20).record(records::Exec{1'000'000, "/nonexistent"}).end(2'000'000);
  const auto r = analyze({write_trace(b, "failed_exec")});
  CHECK(r.processes[0].ended == "exit");
}

TEST_CASE("the exit code is unknown without memstage run's record, and a forked child's report keeps its own") {
  TraceBuilder b;
  b.process(30).end(1'000'000);
  const std::string path = write_trace(b, "exit_code");
  const auto alone = analyze({path});
  CHECK_FALSE(alone.exit_code.has_value());
  CHECK(reports::render_text(alone).find("exit code unknown") != std::string::npos);

  reports::RunInfo run;
  run.command = {"parent", "--flag"};
  run.exit_code = 3;
  run.pid = 30;
  const auto own = analyze({path}, run);
  CHECK(own.exit_code == 3);
  CHECK(own.command == run.command);
  CHECK(own.processes[0].exit_code == 3);

  run.pid = 29;  // memstage started another process: this trace is its child's
  const auto child = analyze({path}, run);
  CHECK_FALSE(child.exit_code.has_value());
  CHECK(child.command == std::vector<std::string>{"test"});
}

TEST_CASE("stats mode says leaks are not measured") {
  TraceBuilder b;
  b.process(40, memstage::trace::Mode::kStats);
  b.record(records::Counters{1'000'000, 10, 2, 4096});
  b.end(1'000'000);
  const auto r = analyze({write_trace(b, "stats_leaks")});
  CHECK_FALSE(r.leaks_measured);
  const std::string text = reports::render_text(r);
  CHECK(text.find("leaked       not measured") != std::string::npos);
  CHECK(text.find("leaked       0 B") == std::string::npos);
}

TEST_CASE("a process whose memory does not go through malloc gets a warning") {
  TraceBuilder own;
  own.process(50).stack({0x10}).alloc(0x1000, 64 * 1024);
  own.rss(1'000'000, 400 * kMiB, 10 * kMiB);
  own.end(1'000'000);
  CHECK(has_warning(analyze({write_trace(own, "own_allocator")}), "went through malloc"));

  TraceBuilder malloc_user;
  malloc_user.process(51).stack({0x10}).alloc(0x1000, 300 * kMiB);
  malloc_user.rss(1'000'000, 400 * kMiB, 10 * kMiB);
  malloc_user.end(1'000'000);
  CHECK_FALSE(has_warning(analyze({write_trace(malloc_user, "malloc_user")}), "went through malloc"));

  TraceBuilder small;  // too little RSS to say anything
  small.process(52).rss(1'000'000, 20 * kMiB, 0).end(1'000'000);
  CHECK_FALSE(has_warning(analyze({write_trace(small, "small")}), "went through malloc"));
}

TEST_CASE("sample mode: peaks from the heap counters, stacks and leaks weighted, and the report says which is which") {
  constexpr uint64_t kRate = 256 * 1024;
  TraceBuilder b;
  b.process(60, memstage::trace::Mode::kSample);
  b.record(records::Sampling{kRate});
  b.stack({0x10}).stack({0x20});
  b.stage_name("load");
  b.record(records::HeapCounters{1'000'000, 1 * kMiB, 1 * kMiB});
  b.stage_begin(0, 1'000'000);
  b.alloc(0x1000, 100, 0);      // a small sample: stands for about the rate
  b.alloc(0x2000, 2 * kMiB, 1);  // past the rate: itself
  b.record(records::HeapCounters{2'000'000, 5 * kMiB, 9 * kMiB});  // the stage's high: 9 MiB
  b.record(records::HeapCounters{3'000'000, 4 * kMiB, 5 * kMiB});
  b.stage_end(3'000'000);
  b.record(records::HeapCounters{4'000'000, 6 * kMiB, 7 * kMiB});
  b.record(records::Counters{4'000'000, 1000, 900, 50 * kMiB});
  b.free(0x1000);
  b.end(4'000'000);
  const auto r = analyze({write_trace(b, "sample_mode")});
  CHECK(r.mode == "sample");
  REQUIRE(r.sampling);
  CHECK(r.sampling->rate_bytes == kRate);
  CHECK(r.sampling->samples == 2);
  CHECK(r.totals.peak_heap_bytes == 9 * kMiB);
  REQUIRE(r.stages.size() == 1);
  CHECK(r.stages[0].figures.peak_heap_bytes == 9 * kMiB);
  // Counts are the tracer's, exact; the leak is the 2 MiB block, exact too.
  CHECK(r.totals.allocations == 1000);
  CHECK(r.totals.frees == 900);
  CHECK(r.totals.bytes_allocated == 50 * kMiB);
  REQUIRE(r.leaks.size() == 1);
  CHECK(r.leaks[0].bytes == 2 * kMiB);
  CHECK(r.leaks[0].blocks == 1);
  // The 100-byte sample stood for 100 / (1 - exp(-100 / rate)) bytes in the stage's stacks.
  uint64_t small_site_bytes = 0;
  for (const auto& f : r.stack_figures) {
    if (f.bytes_allocated < kMiB) small_site_bytes = f.bytes_allocated;
  }
  CHECK(small_site_bytes == static_cast<uint64_t>(std::llround(100 / -std::expm1(-100.0 / kRate))));
  // The note is wrapped under its label: read as one line.
  std::string text = reports::render_text(r);
  for (size_t at; (at = text.find("\n               ")) != std::string::npos;) text.replace(at, 16, " ");
  CHECK(text.find("are estimates") != std::string::npos);
  CHECK(text.find("temporaries not measured") != std::string::npos);
}

TEST_CASE("a long note in the text summary is wrapped under its label, a size kept whole") {
  TraceBuilder b;
  b.process().stack({0x10});
  b.end(1'000'000);
  auto r = analyze({write_trace(b, "note_wrap")});
  r.sampling = reports::SamplingReport{};
  r.sampling->note = std::string(40, 'a') + " " + std::string(40, 'b') + " 256 KiB " + std::string(30, 'c');
  const std::string text = reports::render_text(r);
  CHECK(text.find("  estimates    " + std::string(40, 'a') + " " + std::string(40, 'b') + "\n               256 KiB " +
                  std::string(30, 'c') + "\n") != std::string::npos);
}
