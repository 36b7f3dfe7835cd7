// The latest report of the run so far, computed again on a thread of memstage's own, never
// for a request: any number of requests read the same report, and a request costs no
// analysis. Computed every second, or while one analysis takes more than a third of a
// second, three times its length apart (as the live view does): the analysis never takes
// more than a third of a core.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "reports/model/report_model.h"

namespace memstage::harness {

class ReportCache {
 public:
  using Source = std::function<std::optional<reports::Report>()>;
  // Starts computing at once, from `source` (report_so_far of the run's folder).
  explicit ReportCache(Source source);
  ~ReportCache();  // stops the thread, waiting out an analysis under way
  ReportCache(const ReportCache&) = delete;
  ReportCache& operator=(const ReportCache&) = delete;

  // The latest report, or none yet; `why_none` says why (no trace yet, the analysis's error).
  std::shared_ptr<const reports::Report> latest(std::string& why_none) const;

 private:
  void keep_computing(std::stop_token stop);

  Source source_;
  mutable std::mutex mutex_;
  std::condition_variable_any woken_;
  std::shared_ptr<const reports::Report> latest_;
  std::string why_none_ = "no trace written yet";
  std::jthread thread_;  // last: started once the members it uses exist
};

}  // namespace memstage::harness
