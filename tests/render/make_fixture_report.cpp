// Writes the fixture report through every renderer of reports/render, for the browser test,
// the `go tool pprof` test and for looking at by hand:
//   make_fixture_report OUTDIR [--stacks N] [--stats] [--batches N]
// --batches N adds N stage-marked batches after the run (a long run's page, add_loop_stages).
// --stats drops what stats mode does not record (stacks, their figures, stages' stacks,
// growth).
//   -> OUTDIR/report.html, OUTDIR/report.trace.json, OUTDIR/report.pb.gz
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "reports/render/export/chrome_trace.h"
#include "reports/render/export/pprof.h"
#include "reports/render/html/render_html.h"
#include "tests/render/fixture_report.h"

namespace {

bool write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) std::cerr << "make_fixture_report: cannot write " << path << "\n";
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: make_fixture_report OUTDIR [--stacks N] [--stats] [--batches N]\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  memstage::tests::FixtureOptions options;
  bool stats_mode = false;
  size_t batches = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--stacks" && i + 1 < argc) options.stack_count = std::strtoull(argv[++i], nullptr, 10);
    if (arg == "--stats") stats_mode = true;
    if (arg == "--batches" && i + 1 < argc) batches = std::strtoull(argv[++i], nullptr, 10);
  }
  std::filesystem::create_directories(dir);
  auto report = memstage::tests::make_fixture_report(options);
  if (batches) memstage::tests::add_loop_stages(report, batches);
  if (stats_mode) {
    report.mode = "stats";
    report.stacks.clear();
    report.stack_figures.clear();
    report.top_stacks_at_peak.clear();
    report.leaks.clear();
    report.growth.reset();
    for (auto& stage : report.stages) stage.top_stacks_at_peak.clear();
  }
  const bool ok = write_file(dir / "report.html", memstage::reports::render_html(report)) &&
                  write_file(dir / "report.trace.json", memstage::reports::render_chrome_trace(report)) &&
                  write_file(dir / "report.pb.gz", memstage::reports::render_pprof(report));
  return ok ? 0 : 1;
}
