#include "harness/serve/run_so_far.h"

namespace memstage::harness {

namespace {

std::unique_ptr<reports::TraceBeingWritten> own_followers(const std::string& dir) {
  reports::AnalysisOptions options;
  options.max_event_log_bytes = 0;  // nothing replays their events: no pass two here
  return std::make_unique<reports::TraceBeingWritten>(dir, options);
}

}  // namespace

RunSoFar::RunSoFar(const std::string& dir, reports::TraceBeingWritten* followers)
    : own_(followers ? nullptr : own_followers(dir)), followers_(followers ? followers : own_.get()) {}

std::optional<reports::Report> RunSoFar::report() {
  return followers_->so_far(reports::AnalysisOptions{}, reports::SoFarStacks::kEvery);
}

}  // namespace memstage::harness
