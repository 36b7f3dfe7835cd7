#include "harness/compare/suggest.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/compare/format.h"

namespace memstage::compare {

namespace {

// The stats runs' median where there were any (RSS without the full tracer's stack tables),
// else the full run's figure.
std::optional<uint64_t> peak_rss_of(const RowFigures& row) {
  if (row.peak_rss_bytes.count > 0) return static_cast<uint64_t>(row.peak_rss_bytes.median);
  if (row.memory) return row.memory->peak_rss_bytes;
  return std::nullopt;
}

std::string resolve_stage(const CompareResult& result, const std::string& stage) {
  if (stage.empty() || std::count(result.stage_paths.begin(), result.stage_paths.end(), stage)) return stage;
  std::vector<std::string> named;
  for (const std::string& path : result.stage_paths) {
    const size_t slash = path.rfind('/');
    if (path.substr(slash == std::string::npos ? 0 : slash + 1) == stage) named.push_back(path);
  }
  if (named.size() == 1) return named.front();
  std::string known;
  for (const std::string& path : result.stage_paths) known += (known.empty() ? "" : ", ") + path;
  throw std::invalid_argument(fmt::format("--suggest {}: {} (the stages: {})", stage,
                                          named.empty() ? "no such stage" : "names several stage paths",
                                          known.empty() ? "none" : known));
}

// The ranked figure: the stage's where ranking by one, else the whole run's.
uint64_t key_of(const RankedSetting& r) { return r.stage_peak_rss_bytes.value_or(r.peak_rss_bytes); }

}  // namespace

Suggestions rank_settings(const CompareResult& result, const std::string& stage) {
  Suggestions out;
  out.stage = resolve_stage(result, stage);
  for (const SubjectResult& s : result.subjects) {
    const std::optional<uint64_t> total = peak_rss_of(s.totals);
    if (!total) continue;
    RankedSetting r{s.name, s.allocator, *total, std::nullopt, std::nullopt};
    if (!out.stage.empty()) {
      const RowFigures* row = s.stage(out.stage);
      if (!row || !peak_rss_of(*row)) continue;  // never reached that stage: nothing to rank
      r.stage_peak_rss_bytes = peak_rss_of(*row);
    }
    out.ranked.push_back(std::move(r));
  }
  // Each setting over its allocator untuned (the subject of that allocator without settings).
  for (RankedSetting& r : out.ranked) {
    for (const SubjectResult& s : result.subjects) {
      if (!s.environment.empty() || s.allocator != r.allocator) continue;
      const auto base = std::find_if(out.ranked.begin(), out.ranked.end(),
                                     [&](const RankedSetting& b) { return b.subject == s.name; });
      if (base != out.ranked.end() && key_of(*base) > 0) r.of_untuned = double(key_of(r)) / double(key_of(*base));
    }
  }
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [](const RankedSetting& a, const RankedSetting& b) {
    return key_of(a) != key_of(b) ? key_of(a) < key_of(b) : a.peak_rss_bytes < b.peak_rss_bytes;
  });
  return out;
}

nlohmann::ordered_json suggestions_json(const Suggestions& suggestions) {
  nlohmann::ordered_json j;
  j["ranked_by"] = suggestions.stage.empty() ? "peak RSS" : "the stage's peak RSS, then the run's";
  j["stage"] = suggestions.stage;
  nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
  for (const RankedSetting& r : suggestions.ranked) {
    nlohmann::ordered_json rj;
    rj["subject"] = r.subject;
    rj["allocator"] = r.allocator;
    rj["peak_rss_bytes"] = r.peak_rss_bytes;
    if (r.stage_peak_rss_bytes) rj["stage_peak_rss_bytes"] = *r.stage_peak_rss_bytes;
    rj["of_untuned"] = r.of_untuned ? nlohmann::ordered_json(*r.of_untuned) : nlohmann::ordered_json();
    ranked.push_back(std::move(rj));
  }
  j["ranked"] = std::move(ranked);
  return j;
}

std::string render_suggestions_text(const Suggestions& suggestions) {
  std::string text = suggestions.stage.empty() ? "Settings by peak RSS, lowest first:\n"
                                               : "Settings by the peak RSS of " + suggestions.stage + ", lowest first:\n";
  size_t width = 7;
  for (const RankedSetting& r : suggestions.ranked) width = std::max(width, r.subject.size());
  text += fmt::format("  {:<{}}  {:>10}  {:>10}  {:>10}\n", "setting", width, "peak RSS",
                      suggestions.stage.empty() ? "" : "stage", "x untuned");
  for (const RankedSetting& r : suggestions.ranked) {
    text += fmt::format("  {:<{}}  {:>10}  {:>10}  {:>10}\n", r.subject, width, format_bytes(r.peak_rss_bytes),
                        r.stage_peak_rss_bytes ? format_bytes(*r.stage_peak_rss_bytes) : "",
                        r.of_untuned ? fmt::format("{:.3f}", *r.of_untuned) : "");
  }
  return text;
}

}  // namespace memstage::compare
