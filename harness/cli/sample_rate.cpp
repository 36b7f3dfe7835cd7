#include "harness/cli/sample_rate.h"

#include "harness/cli/cli_error.h"
#include "harness/cli/sizes.h"
#include "profiler/preload/options.h"

namespace memstage::harness {

uint64_t sample_rate_bytes(const std::string& command, const std::string& mode, const std::string& text) {
  if (text.empty()) return preload::kDefaultSampleRateBytes;
  if (mode != "sample") throw CliError(command + ": --sample-rate is for --mode sample");
  const auto bytes = parse_size(text);
  if (!bytes || *bytes == 0 || *bytes > (1ull << 40)) {
    throw CliError(command + ": --sample-rate takes a size from 1 byte to 1TiB like 256KiB, not '" + text + "'");
  }
  return *bytes;
}

void add_sample_rate_option(CLI::App& cmd, std::string& text) {
  cmd.add_option("--sample-rate", text,
                 "Sample mode: one sample per this many bytes allocated on average (default 256KiB; "
                 "docs/sample-mode.md)");
}

}  // namespace memstage::harness
