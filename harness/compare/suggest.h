// `--suggest [STAGE]`: the subjects of a comparison (each allocator untuned and under the
// settings of its grid, allocator_tuning.h) ranked by peak RSS, lowest first; with STAGE, by
// that stage's peak RSS first and the whole run's second.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/compare/compare_model.h"

namespace memstage::compare {

struct RankedSetting {
  std::string subject;                          // "jemalloc" or "jemalloc:dirty_decay_ms=0"
  std::string allocator;                        // as the tracer detected it
  uint64_t peak_rss_bytes = 0;                  // median over the stats runs, else the full run's
  std::optional<uint64_t> stage_peak_rss_bytes; // the same for STAGE, where the subject has it
  std::optional<double> of_untuned;             // the ranked figure over the untuned allocator's
};

struct Suggestions {
  std::string stage;  // the path ranked by; "" for the whole run
  std::vector<RankedSetting> ranked;  // lowest first; subjects without figures left out
};

// `stage` is a stage path, or a stage name that names one path only. Throws
// std::invalid_argument with one line naming the stages there are when it is neither.
Suggestions rank_settings(const CompareResult& result, const std::string& stage);

nlohmann::ordered_json suggestions_json(const Suggestions& suggestions);
std::string render_suggestions_text(const Suggestions& suggestions);

}  // namespace memstage::compare
