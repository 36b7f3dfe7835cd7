// Units of harness/files: read_input_file on FIFOs, devices and large files,
// write_named_output_file on devices, FIFOs and descriptors, and read_figures' one merge rule.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "harness/files/input_files.h"
#include "harness/files/output_files.h"
#include "harness/files/report_figures.h"
#include "harness/files/report_json.h"

using namespace memstage::files;
using Json = nlohmann::json;

namespace {

// A folder of its own under TMPDIR, removed with its files at the end of a test.
struct TempFolder {
  std::string path;
  TempFolder() {
    std::string pattern = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/memstage-files-XXXXXX";
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempFolder() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

std::string input_error(const std::string& path, size_t max_bytes = kMaxSmallInputBytes) {
  try {
    read_input_file(path, "budget", max_bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("an input is read whole when it is a regular file within the bound") {
  TempFolder dir;
  std::ofstream(dir / "budget.json") << "{\"totals\": {}}";
  CHECK(read_input_file(dir / "budget.json", "budget", 1024) == "{\"totals\": {}}");
  std::ofstream(dir / "empty");
  CHECK(read_input_file(dir / "empty", "budget", 1024).empty());
}

TEST_CASE("a FIFO as input is refused at once, not waited on") {
  TempFolder dir;
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = input_error(dir / "fifo");
  CHECK(error == "cannot read budget " + (dir / "fifo") + ": a FIFO, not a regular file");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("a device, a folder and a missing file as input are refused with one line") {
  TempFolder dir;
  CHECK(input_error("/dev/zero") == "cannot read budget /dev/zero: a device, not a regular file");
  CHECK(input_error(dir.path) == "cannot read budget " + dir.path + ": a folder, not a regular file");
  CHECK(input_error(dir / "nothing") == "cannot read budget " + (dir / "nothing") + ": No such file or directory");
}

TEST_CASE("an input larger than its bound is refused before it is read") {
  TempFolder dir;
  std::ofstream(dir / "big") << std::string(3 << 20, 'x');
  CHECK(input_error(dir / "big", 2 << 20).find("larger than 2 MiB") != std::string::npos);
  CHECK(read_input_file(dir / "big", "budget", 3 << 20).size() == (3u << 20));
}

TEST_CASE("a named output that is a device is written to, never replaced") {
  write_named_output_file("/dev/null", "report\n");
  struct stat st;
  REQUIRE(stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  // /dev/full says "no space": the write's error, not a file renamed over it.
  CHECK_THROWS_WITH(write_named_output_file("/dev/full", "report\n"), "cannot write /dev/full: No space left on device");
  REQUIRE(stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("a named output that is a FIFO is written as a stream") {
  TempFolder dir;
  const std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::string read_back;
  std::thread reader([&] { read_back = slurp(fifo); });
  write_named_output_file(fifo, "through the pipe\n");
  reader.join();
  CHECK(read_back == "through the pipe\n");
  struct stat st;
  REQUIRE(lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("a named output /dev/fd/N is that descriptor, written at its offset") {
  TempFolder dir;
  const int fd = open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "before\n", 7) == 7);
  write_named_output_file("/dev/fd/" + std::to_string(fd), "report\n");
  close(fd);
  CHECK(slurp(dir / "out") == "before\nreport\n");
}

TEST_CASE("a named output that is a regular file or a folder") {
  TempFolder dir;
  std::ofstream(dir / "report.txt") << "old";
  write_named_output_file(dir / "report.txt", "new");
  CHECK(slurp(dir / "report.txt") == "new");
  CHECK_THROWS_WITH(write_named_output_file(dir.path, "x"), "cannot write " + dir.path + ": it is a folder");
}

TEST_CASE("a link to a regular file under a named output's name is replaced, not followed") {
  TempFolder dir;
  std::ofstream(dir / "victim") << "victim";
  REQUIRE(symlink((dir / "victim").c_str(), (dir / "report.txt").c_str()) == 0);
  write_named_output_file(dir / "report.txt", "report");
  CHECK(slurp(dir / "victim") == "victim");
  CHECK(slurp(dir / "report.txt") == "report");
}

namespace {

Json row(const std::string& path, Json peak_heap, Json leaked, double ratio, double start_s, double end_s) {
  return Json{{"name", path.substr(path.rfind('/') + 1)},
              {"path", path},
              {"start_s", start_s},
              {"end_s", end_s},
              {"peak_heap_bytes", peak_heap},
              {"peak_rss_bytes", 1000},
              {"leaked_bytes", leaked},
              {"allocations", 10},
              {"bytes_allocated", 100},
              {"fragmentation", {{"ratio", ratio}, {"estimated", false}}},
              {"rss_breakdown", {{"allocator_resident_bytes", 500}}}};
}

Json report_of(Json stages, const std::string& mode = "full") {
  return Json{{"schema", "memstage.report/1"},
              {"mode", mode},
              {"duration_s", 2.5},
              {"totals", {{"peak_heap_bytes", 700}, {"peak_rss_bytes", 900}, {"leaked_bytes", 4}}},
              {"stages", std::move(stages)}};
}

std::string figures_error(const Json& report) {
  try {
    read_figures(report, "r.json");
  } catch (const ReportFileError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a stage path's rows merge by one rule: highs for peaks and fragmentation, sums for the rest") {
  const ReportFigures figures =
      read_figures(report_of({row("train/epoch", 200, 1000, 0.35, 1, 2), row("load", 50, 0, 0.1, 0, 1),
                              row("train/epoch", 250, 3000, 0.1, 2, 4)}),
                   "r.json");
  CHECK(figures.mode == "full");
  CHECK(figures.stage_paths == std::vector<std::string>{"train/epoch", "load"});
  const ScopeFigures* epoch = figures.stage("train/epoch");
  REQUIRE(epoch);
  CHECK(epoch->rows == 2);
  CHECK((*epoch)[Figure::kPeakHeapBytes] == 250);
  CHECK((*epoch)[Figure::kLeakedBytes] == 4000);
  CHECK((*epoch)[Figure::kFragmentationRatio] == 0.35);  // the worst row's, not the last's
  CHECK((*epoch)[Figure::kDurationS] == 3);
  CHECK((*epoch)[Figure::kAllocations] == 20);
  CHECK((*epoch)[Figure::kAllocatorResidentBytes] == 500);
  CHECK(figures.paths_by_name.at("epoch") == std::vector<std::string>{"train/epoch"});
  CHECK(figures.totals[Figure::kDurationS] == 2.5);
  CHECK(figures.totals[Figure::kPeakHeapBytes] == 700);
}

TEST_CASE("a figure that is null or absent is not measured, never 0") {
  Json report = report_of({row("load", nullptr, nullptr, 0.1, 0, 1)}, "stats");
  report["totals"].erase("leaked_bytes");
  const ReportFigures figures = read_figures(report, "r.json");
  CHECK_FALSE(figures.totals[Figure::kLeakedBytes].has_value());
  CHECK_FALSE((*figures.stage("load"))[Figure::kPeakHeapBytes].has_value());
  CHECK_FALSE((*figures.stage("load"))[Figure::kLeakedBytes].has_value());
  CHECK(figures.totals[Figure::kPeakDeviceBytes] == 0);  // a run that used no device memory
  CHECK_FALSE(figures.used_device);
  // A report from before null leak figures said so in leaks_measured.
  Json old = report_of({row("load", 5, 0, 0.1, 0, 1)}, "stats");
  old["leaks_measured"] = false;
  CHECK_FALSE(read_figures(old, "r.json").totals[Figure::kLeakedBytes].has_value());
}

TEST_CASE("a malformed figure is an error naming its field") {
  Json report = report_of(Json::array());
  report["totals"]["peak_heap_bytes"] = "big";
  CHECK(figures_error(report) == "r.json: totals.peak_heap_bytes: \"big\" is not a figure (a number of 0 or more)");
  report["totals"]["peak_heap_bytes"] = -5;
  CHECK(figures_error(report) == "r.json: totals.peak_heap_bytes: -5 is not a figure (a number of 0 or more)");
  Json ratio = report_of({row("load", 5, 0, 1.5, 0, 1)});
  CHECK(figures_error(ratio) == "r.json: stages[0].fragmentation.ratio: 1.5 is not a figure (a number in 0..1)");
  Json not_object = report_of(Json::array({7}));
  CHECK(figures_error(not_object) == "r.json: stages[0] is not an object of figures");
}
