// The tracer's count of its own resident bytes (profiler/preload/tracer_memory.h): a large
// mapping counts the pages touched; once wholly resident it is counted whole without asking
// the kernel, and pages the kernel took back are seen within 64 counts; a settled mapping
// counts what it held when settled; one whose pages were replaced (a fork's child's pending
// buffers) is asked again at once; an unmapped one nothing.
#include "profiler/preload/tracer_memory.h"

#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

using memstage::preload::tracer_map;
using memstage::preload::tracer_map_shared_file;
using memstage::preload::tracer_resident_bytes;
using memstage::preload::tracer_settled;
using memstage::preload::tracer_unmap;

namespace {
constexpr uint64_t kPage = 4096;
constexpr uint64_t kBytes = 256 * kPage;  // 1 MiB: a large mapping, in 4 KiB pages

void touch(uint8_t* p, uint64_t first_page, uint64_t pages) {
  for (uint64_t i = first_page; i < first_page + pages; ++i) p[i * kPage] = 1;
}
void give_back(uint8_t* p, uint64_t first_page, uint64_t pages) {
  REQUIRE(madvise(p + first_page * kPage, pages * kPage, MADV_DONTNEED) == 0);
}
// A large mapping with every page touched.
uint8_t* touched_mapping() {
  auto* p = static_cast<uint8_t*>(tracer_map(kBytes));
  REQUIRE(p);
  touch(p, 0, kBytes / kPage);
  return p;
}
}  // namespace

TEST_CASE("tracer memory: a large mapping counts its touched pages, then whole", "[tracer_memory]") {
  const uint64_t before = tracer_resident_bytes();
  auto* p = static_cast<uint8_t*>(tracer_map(kBytes));
  REQUIRE(p);
  CHECK(tracer_resident_bytes() == before);
  touch(p, 0, 16);
  CHECK(tracer_resident_bytes() == before + 16 * kPage);
  touch(p, 16, 240);
  CHECK(tracer_resident_bytes() == before + kBytes);
  CHECK(tracer_resident_bytes() == before + kBytes);  // whole: not asked again

  // Pages taken back from a mapping counted whole are seen within 64 counts.
  give_back(p, 128, 128);
  uint64_t latest = 0;
  for (int i = 0; i < 64; ++i) latest = tracer_resident_bytes();
  CHECK(latest == before + kBytes / 2);
  // Asked at every count again.
  touch(p, 128, 1);
  CHECK(tracer_resident_bytes() == before + kBytes / 2 + kPage);

  tracer_unmap(p, kBytes);
  CHECK(tracer_resident_bytes() == before);
}

TEST_CASE("tracer memory: a settled mapping counts what it held when settled", "[tracer_memory]") {
  const uint64_t before = tracer_resident_bytes();
  uint8_t* p = touched_mapping();
  give_back(p, 1, 255);  // as an index left for lookups keeps its first page
  tracer_settled(p);
  CHECK(tracer_resident_bytes() == before + kPage);
  // Reads of its emptied pages (a lookup still running in it) add nothing.
  uint64_t sum = 0;
  for (uint64_t i = 0; i < 256; ++i) sum += p[i * kPage];
  CHECK(sum == 1);
  CHECK(tracer_resident_bytes() == before + kPage);
  tracer_unmap(p, kBytes);
  CHECK(tracer_resident_bytes() == before);
}

TEST_CASE("tracer memory: a mapping whose pages were replaced is asked again at once", "[tracer_memory]") {
  const uint64_t before = tracer_resident_bytes();
  uint8_t* p = touched_mapping();
  CHECK(tracer_resident_bytes() == before + kBytes);
  // As a fork's child puts private pages in place of the pending buffers' shared ones.
  REQUIRE(tracer_map_shared_file(-1, kBytes, p) == p);
  CHECK(tracer_resident_bytes() == before);
  touch(p, 0, 2);
  CHECK(tracer_resident_bytes() == before + 2 * kPage);
  tracer_unmap(p, kBytes);
  CHECK(tracer_resident_bytes() == before);
}
