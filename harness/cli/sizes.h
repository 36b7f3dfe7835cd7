// Sizes as people write them: "512MiB", "16GiB", "1.5G", "100k", "4096" (bytes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace memstage::harness {

// K/M/G/T (and KB/MB/GB/TB, KiB/MiB/GiB/TiB) are all powers of 1024, as RAM is sold;
// case-insensitive; an optional "B". Nothing when the text is not a size.
std::optional<uint64_t> parse_size(const std::string& text);

}  // namespace memstage::harness
