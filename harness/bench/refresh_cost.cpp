// What a refresh of the endpoint (harness/serve) costs as a run's capture grows: follows the
// run being written into DIR as `memstage run` does and, every INTERVAL_S for COUNT
// intervals, prints the capture's bytes, the time of the run so far from the followers (the
// endpoint's source, run_so_far.h) and of a whole analysis of the traces as written (its
// source before), the tracer's own resident bytes at the latest sample, and the resident
// bytes of each PID given (memstage, the program).
//   memstage_refresh_cost DIR INTERVAL_S COUNT [PID...]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "reports/analysis/analyzer.h"

namespace {

namespace reports = memstage::reports;

uint64_t capture_bytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const std::string& path : reports::find_traces(dir)) {
    std::error_code ec;
    bytes += std::filesystem::file_size(path, ec);
  }
  return bytes;
}

uint64_t resident_bytes(const char* pid) {
  std::ifstream status(std::string("/proc/") + pid + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return 0;
}

// Milliseconds `f` took; -1 where it threw (a trace caught mid-write).
template <class F>
double timed_ms(F f) {
  const auto start = std::chrono::steady_clock::now();
  try {
    f();
  } catch (const std::exception&) {
    return -1;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s DIR INTERVAL_S COUNT [PID...]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const double interval_s = atof(argv[2]);
  const int count = atoi(argv[3]);
  reports::AnalysisOptions options;
  options.max_event_log_bytes = 0;  // as the endpoint's own followers
  reports::TraceBeingWritten followers(dir, options);
  printf("t_s capture_bytes so_far_ms analysis_ms tracer_bytes rss_bytes_of_pids...\n");
  for (int i = 1; i <= count; ++i) {
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
    const uint64_t bytes = capture_bytes(dir);
    uint64_t tracer_bytes = 0;
    const double so_far_ms = timed_ms([&] {
      const auto r = followers.so_far(reports::AnalysisOptions{}, reports::SoFarStacks::kEvery);
      if (r && !r->timeline.empty()) tracer_bytes = r->timeline.back().tracer_bytes;
    });
    const double analysis_ms =
        timed_ms([&] { reports::analyze(reports::find_traces(dir), std::nullopt, reports::AnalysisOptions{}); });
    printf("%.0f %llu %.1f %.1f %llu", i * interval_s, static_cast<unsigned long long>(bytes), so_far_ms, analysis_ms,
           static_cast<unsigned long long>(tracer_bytes));
    for (int p = 4; p < argc; ++p) printf(" %llu", static_cast<unsigned long long>(resident_bytes(argv[p])));
    printf("\n");
    fflush(stdout);
  }
  return 0;
}
