#include "profiler/preload/options.h"

#include <cstdlib>
#include <cstring>

namespace memstage::preload {
namespace {

bool read_uint(const char* name, uint32_t min, uint32_t max, uint32_t& out) {
  const char* v = getenv(name);
  if (!v || !*v) return false;
  char* end = nullptr;
  unsigned long n = strtoul(v, &end, 10);
  if (*end || n < min || n > max) return false;
  out = static_cast<uint32_t>(n);
  return true;
}

}  // namespace

Options read_options() {
  Options o;
  if (const char* dir = getenv("MEMSTAGE_OUTPUT"); dir && strlen(dir) < sizeof(o.output_dir)) {
    strcpy(o.output_dir, dir);
  }
  if (const char* mode = getenv("MEMSTAGE_MODE"); mode && strcmp(mode, "stats") == 0) {
    o.mode = trace::Mode::kStats;
  } else if (mode && strcmp(mode, "aggregate") == 0) {
    o.mode = trace::Mode::kAggregate;
  } else if (mode && strcmp(mode, "sample") == 0) {
    o.mode = trace::Mode::kSample;
  }
  if (const char* rate = getenv("MEMSTAGE_SAMPLE_RATE_BYTES"); rate && *rate) {
    char* end = nullptr;
    const unsigned long long bytes = strtoull(rate, &end, 10);
    if (*end == '\0' && bytes > 0 && bytes <= (1ull << 40)) o.sample_rate_bytes = bytes;
  }
  read_uint("MEMSTAGE_MAX_DEPTH", 1, 256, o.max_depth);
  read_uint("MEMSTAGE_SAMPLE_INTERVAL_MS", 1, 10000, o.sample_interval_ms);
  read_uint("MEMSTAGE_SNAPSHOT_INTERVAL_MS", 1, 3'600'000, o.snapshot_interval_ms);
  read_uint("MEMSTAGE_TIMELINE_TICKS", 0, 100'000'000, o.timeline_full_rate_ticks);
  if (const char* limit = getenv("MEMSTAGE_RAM_LIMIT_BYTES"); limit && *limit) {
    char* end = nullptr;
    const unsigned long long bytes = strtoull(limit, &end, 10);
    if (*end == '\0') o.ram_limit_bytes = bytes;
  }
  if (const char* action = getenv("MEMSTAGE_RAM_LIMIT_ACTION"); action && strcmp(action, "record") == 0) {
    o.ram_limit_stops = false;
  }
  uint32_t follow = 1;
  if (read_uint("MEMSTAGE_FOLLOW_FORK", 0, 1, follow)) o.follow_fork = follow == 1;
  return o;
}

}  // namespace memstage::preload
