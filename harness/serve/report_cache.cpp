#include "harness/serve/report_cache.h"

#include <algorithm>
#include <chrono>

namespace memstage::harness {

ReportCache::ReportCache(Source source)
    : source_(std::move(source)), thread_([this](std::stop_token stop) { keep_computing(stop); }) {}

ReportCache::~ReportCache() {
  thread_.request_stop();
  woken_.notify_all();
}

std::shared_ptr<const reports::Report> ReportCache::latest(std::string& why_none) const {
  std::lock_guard lock(mutex_);
  if (!latest_) why_none = why_none_;
  return latest_;
}

void ReportCache::keep_computing(std::stop_token stop) {
  while (!stop.stop_requested()) {
    const auto start = std::chrono::steady_clock::now();
    std::shared_ptr<const reports::Report> report;
    std::string error;
    try {
      if (auto computed = source_()) report = std::make_shared<const reports::Report>(std::move(*computed));
    } catch (const std::exception& e) {
      error = e.what();  // a trace caught mid-write: the next try reads further
    }
    const auto took = std::chrono::steady_clock::now() - start;
    std::unique_lock lock(mutex_);
    if (report) latest_ = std::move(report);
    if (!error.empty()) why_none_ = "the run could not be analysed yet: " + error;
    const auto wait = std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), took * 3);
    woken_.wait_for(lock, stop, wait, [] { return false; });
  }
}

}  // namespace memstage::harness
