#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <zlib.h>

#include "profile.pb.h"
#include "reports/render/export/pprof.h"
#include "tests/render/fixture_report.h"

namespace {

std::string gunzip(const std::string& data) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  inflateEnd(&z);
  REQUIRE(rc == Z_STREAM_END);
  return out;
}

}  // namespace

TEST_CASE("pprof export parses back with the sample values of the report", "[pprof]") {
  const auto report = memstage::tests::make_fixture_report();
  const std::string gz = memstage::reports::render_pprof(report);
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);  // gzip magic
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);

  perftools::profiles::Profile profile;
  REQUIRE(profile.ParseFromString(gunzip(gz)));
  const auto& strings = profile.string_table();
  REQUIRE(!strings.empty());
  CHECK(strings[0].empty());
  std::vector<std::pair<std::string, std::string>> types;
  for (const auto& t : profile.sample_type()) types.emplace_back(strings[t.type()], strings[t.unit()]);
  CHECK(types == std::vector<std::pair<std::string, std::string>>{
                     {"inuse_space", "bytes"}, {"alloc_space", "bytes"}, {"alloc_objects", "count"}, {"leaked_space", "bytes"}});

  // Sums per sample type equal the report's.
  int64_t inuse = 0, alloc_space = 0, alloc_objects = 0, leaked = 0;
  for (const auto& s : profile.sample()) {
    REQUIRE(s.value_size() == 4);
    inuse += s.value(0);
    alloc_space += s.value(1);
    alloc_objects += s.value(2);
    leaked += s.value(3);
  }
  uint64_t live_at_peak = 0;
  for (const auto& f : report.stack_figures) live_at_peak += f.live_at_peak_bytes;
  CHECK(static_cast<uint64_t>(inuse) == live_at_peak);
  CHECK(static_cast<uint64_t>(alloc_space) == report.totals.bytes_allocated);
  CHECK(static_cast<uint64_t>(alloc_objects) == report.totals.allocations);
  CHECK(static_cast<uint64_t>(leaked) == report.totals.leaked_bytes);

  // The largest leak's leaf location names leak_a (the allocator's frame below it is left
  // out, as pprof's own heap profiles do) in the report's module, labelled with its stage.
  std::map<uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : profile.location()) locations[l.id()] = &l;
  std::map<uint64_t, std::string> functions;
  for (const auto& f : profile.function()) functions[f.id()] = strings[f.name()];
  std::map<uint64_t, std::string> mappings;
  for (const auto& m : profile.mapping()) mappings[m.id()] = strings[m.filename()];
  const perftools::profiles::Sample* largest = nullptr;
  for (const auto& s : profile.sample()) {
    if (!largest || s.value(3) > largest->value(3)) largest = &s;
  }
  REQUIRE(largest);
  CHECK(static_cast<uint64_t>(largest->value(3)) == report.leaks[0].bytes);
  REQUIRE(largest->location_id_size() >= 2);
  const auto* site = locations.at(largest->location_id(0));
  CHECK(functions.at(site->line(0).function_id()) == "leak_a");
  CHECK(mappings.at(site->mapping_id()) == "/opt/textclf/lib/libtextfeatures.so");
  // No sample's leaf is allocation plumbing (the model's Frame::allocator).
  for (const auto& sample : profile.sample()) {
    const std::string leaf = functions.at(locations.at(sample.location_id(0))->line(0).function_id());
    INFO(leaf);
    CHECK(leaf != "malloc");
    CHECK(leaf.rfind("operator new", 0) == std::string::npos);
    CHECK(leaf.find("std::") == std::string::npos);
  }
  REQUIRE(largest->label_size() == 1);
  CHECK(strings[largest->label(0).key()] == "stage");
  CHECK(strings[largest->label(0).str()] == report.stages[report.leaks[0].stage].path);
}

TEST_CASE("pprof export of an empty Report parses", "[pprof]") {
  perftools::profiles::Profile profile;
  REQUIRE(profile.ParseFromString(gunzip(memstage::reports::render_pprof(memstage::reports::Report{}))));
  CHECK(profile.sample_type_size() == 4);
  CHECK(profile.sample_size() == 0);
}

TEST_CASE("pprof export's samples are the report's stack figures, location by location", "[pprof]") {
  using memstage::reports::FrameIndex;
  using memstage::reports::StackStageFigures;
  auto report = memstage::tests::make_fixture_report();
  // A stack in a second stage, one outside every stage, one with nothing to show and one
  // naming no stack: the export writes the first two and skips the others.
  REQUIRE(report.stack_figures.size() >= 2);
  StackStageFigures again = report.stack_figures[0];
  again.stage = report.stack_figures[0].stage == 0 ? 1 : 0;
  again.allocations = 3;
  again.bytes_allocated = 96;
  again.live_at_peak_bytes = 32;
  again.leaked_bytes = 0;
  StackStageFigures unstaged = report.stack_figures[1];
  unstaged.stage = -1;
  StackStageFigures nothing{};
  nothing.stack = report.stack_figures[1].stack;
  StackStageFigures no_stack = report.stack_figures[1];
  no_stack.stack = static_cast<memstage::reports::StackIndex>(report.stacks.size());
  report.stack_figures.insert(report.stack_figures.end(), {again, unstaged, nothing, no_stack});

  perftools::profiles::Profile profile;
  REQUIRE(profile.ParseFromString(gunzip(memstage::reports::render_pprof(report))));
  const auto& strings = profile.string_table();
  std::map<uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : profile.location()) locations[l.id()] = &l;
  std::map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : profile.function()) functions[f.id()] = &f;
  std::map<uint64_t, std::string> mappings;
  for (const auto& m : profile.mapping()) mappings[m.id()] = strings.at(m.filename());

  std::vector<const StackStageFigures*> shown;
  for (const auto& f : report.stack_figures) {
    if (f.stack >= report.stacks.size()) continue;
    if (f.live_at_peak_bytes == 0 && f.bytes_allocated == 0 && f.allocations == 0 && f.leaked_bytes == 0) continue;
    shown.push_back(&f);
  }
  REQUIRE(static_cast<size_t>(profile.sample_size()) == shown.size());
  size_t inlined_locations = 0, unmapped_locations = 0;  // the fixture has both
  for (size_t i = 0; i < shown.size(); ++i) {
    const StackStageFigures& f = *shown[i];
    const auto& sample = profile.sample(static_cast<int>(i));
    INFO("sample " << i << ", stack " << f.stack);
    REQUIRE(sample.value_size() == 4);
    CHECK(sample.value(0) == static_cast<int64_t>(f.live_at_peak_bytes));
    CHECK(sample.value(1) == static_cast<int64_t>(f.bytes_allocated));
    CHECK(sample.value(2) == static_cast<int64_t>(f.allocations));
    CHECK(sample.value(3) == static_cast<int64_t>(f.leaked_bytes));
    REQUIRE(sample.label_size() == 1);
    CHECK(strings.at(sample.label(0).key()) == "stage");
    CHECK(strings.at(sample.label(0).str()) == (f.stage >= 0 ? report.stages.at(f.stage).path : "(none)"));

    // The locations' lines, in order, are the stack's program frames innermost first; a
    // location ends at a frame that is not inlined into its caller, and has that frame's
    // address and module.
    std::vector<FrameIndex> frames;
    for (FrameIndex id : memstage::reports::program_frames(report, report.stacks[f.stack])) frames.push_back(id);
    size_t next = 0;
    for (const uint64_t location_id : sample.location_id()) {
      const auto* location = locations.at(location_id);
      REQUIRE(location->line_size() >= 1);
      inlined_locations += location->line_size() > 1;
      unmapped_locations += location->mapping_id() == 0;
      for (int l = 0; l < location->line_size(); ++l, ++next) {
        REQUIRE(next < frames.size());
        const auto& frame = report.frame(frames[next]);
        const auto& line = location->line(l);
        const auto* function = functions.at(line.function_id());
        if (!frame.function.empty()) CHECK(strings.at(function->name()) == frame.function);
        CHECK(!strings.at(function->name()).empty());
        CHECK(strings.at(function->filename()) == frame.file);
        CHECK(line.line() == frame.line);
        const bool last = l + 1 == location->line_size();
        if (!last) CHECK(frame.inlined);
        if (last && next + 1 < frames.size()) CHECK(!frame.inlined);  // the stack's outermost may be
        if (last) {
          CHECK(location->address() == frame.address);
          if (frame.kind == "native" && !frame.module.empty()) {
            CHECK(mappings.at(location->mapping_id()) == frame.module);
          } else {
            CHECK(location->mapping_id() == 0);
          }
        }
      }
    }
    CHECK(next == frames.size());
  }
  CHECK(inlined_locations > 0);
  CHECK(unmapped_locations > 0);
  // The stack shown again in another stage names the same locations.
  const auto first = std::find(shown.begin(), shown.end(), &report.stack_figures[0]) - shown.begin();
  REQUIRE(static_cast<size_t>(first) < shown.size());
  const auto second = std::find_if(shown.begin(), shown.end(), [&](const StackStageFigures* f) {
                        return f->stack == again.stack && f->stage == again.stage && f->allocations == 3;
                      }) - shown.begin();
  REQUIRE(static_cast<size_t>(second) < shown.size());
  CHECK(std::vector<uint64_t>(profile.sample(first).location_id().begin(), profile.sample(first).location_id().end()) ==
        std::vector<uint64_t>(profile.sample(second).location_id().begin(), profile.sample(second).location_id().end()));
}

TEST_CASE("Go's heap profile: Go's sample types, in use the report's leaks, allocated its stack figures", "[pprof]") {
  const auto report = memstage::tests::make_fixture_report();
  for (const std::string default_type : {"inuse_space", "alloc_space"}) {
    perftools::profiles::Profile profile;
    REQUIRE(profile.ParseFromString(gunzip(memstage::reports::render_pprof_heap(report, default_type))));
    const auto& strings = profile.string_table();
    std::vector<std::pair<std::string, std::string>> types;
    for (const auto& t : profile.sample_type()) types.emplace_back(strings[t.type()], strings[t.unit()]);
    CHECK(types == std::vector<std::pair<std::string, std::string>>{
                       {"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}});
    CHECK(strings[profile.default_sample_type()] == default_type);
    int64_t sums[4] = {};
    for (const auto& s : profile.sample()) {
      REQUIRE(s.value_size() == 4);
      for (int i = 0; i < 4; ++i) sums[i] += s.value(i);
    }
    uint64_t held_bytes = 0, held_blocks = 0;
    for (const auto& leak : report.leaks) held_bytes += leak.bytes, held_blocks += leak.blocks;
    CHECK(static_cast<uint64_t>(sums[0]) == report.totals.allocations);
    CHECK(static_cast<uint64_t>(sums[1]) == report.totals.bytes_allocated);
    CHECK(static_cast<uint64_t>(sums[2]) == held_blocks);
    CHECK(static_cast<uint64_t>(sums[3]) == held_bytes);
  }
  CHECK_THROWS(memstage::reports::render_pprof_heap(report, "leaked_space"));
}

TEST_CASE("Go's heap profile in sample mode: the period is the sampling rate", "[pprof]") {
  auto report = memstage::tests::make_fixture_report();
  report.sampling = memstage::reports::SamplingReport{512 * 1024, 10, "estimates"};
  perftools::profiles::Profile profile;
  REQUIRE(profile.ParseFromString(gunzip(memstage::reports::render_pprof_heap(report, "inuse_space"))));
  CHECK(profile.period() == 512 * 1024);
}
