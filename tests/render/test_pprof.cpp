#include <map>
#include <string>

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
