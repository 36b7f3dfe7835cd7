// --sample-rate, as `memstage run` and `memstage attach` take it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace memstage::harness {

// The mean bytes between samples for `--mode MODE --sample-rate TEXT` of `command`
// ("run", "attach"): the default without TEXT; a CliError when TEXT is given for another
// mode or is not a size from 1 byte to 1 TiB.
uint64_t sample_rate_bytes(const std::string& command, const std::string& mode, const std::string& text);

// Adds --sample-rate to `cmd`, its text kept in `text` for sample_rate_bytes.
void add_sample_rate_option(CLI::App& cmd, std::string& text);

}  // namespace memstage::harness
