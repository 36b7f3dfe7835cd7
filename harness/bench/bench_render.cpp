// What each renderer costs on a real run's report, apart from the analysis: the run's
// folder is analysed once, then each format is rendered per iteration; and what freeing
// the model costs (memstage frees it at exit). Usage:
//   build/bench/memstage_bench_render RUN_DIR [--benchmark_repetitions=3 ...]
// A large report: build/bin/memstage run -q -o DIR -- /usr/bin/python3 harness/bench/torch_small.py
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "reports/analysis/analyzer.h"
#include "reports/render/export/chrome_trace.h"
#include "reports/render/export/pprof.h"
#include "reports/render/html/render_html.h"
#include "reports/render/json/json_report.h"
#include "reports/render/text/text_report.h"

namespace {

using memstage::reports::Report;

const Report* g_report = nullptr;

std::string render_text(const Report& report) { return memstage::reports::render_text(report); }

template <std::string (*Render)(const Report&)>
void BM_render(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = Render(*g_report);
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["output_bytes"] = static_cast<double>(bytes);
}

// Freeing a copy of the model, as the process does with the original at exit.
void BM_free_model(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    auto* copy = new Report(*g_report);
    state.ResumeTiming();
    delete copy;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: %s RUN_DIR [benchmark flags]\n", argv[0]);
    return 2;
  }
  const Report report = memstage::reports::analyze(memstage::reports::find_traces(argv[1]), std::nullopt, {});
  g_report = &report;
  fprintf(stderr, "%zu stacks of %zu nodes, %zu stack figures, %zu frames\n", report.stacks.size(),
          report.stack_nodes.size(), report.stack_figures.size(), report.frames.size());
  argv[1] = argv[0];
  int rest = argc - 1;
  benchmark::Initialize(&rest, argv + 1);
  benchmark::RegisterBenchmark("render_json", BM_render<memstage::reports::render_json>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("render_html", BM_render<memstage::reports::render_html>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("render_text", BM_render<render_text>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("render_pprof", BM_render<memstage::reports::render_pprof>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("render_chrome_trace", BM_render<memstage::reports::render_chrome_trace>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("free_model", BM_free_model)->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
