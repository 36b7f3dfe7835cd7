// The job (report_model.h JobReport) from every process's pass one: its figures on the
// job's clock (job_clock.h), and where each process stood at the job's heap peak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "reports/analysis/first_pass.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

// The job's figures, and the event each process is to be replayed up to for the stacks
// held at the job's peak.
struct JobPlan {
  std::vector<size_t> order;  // files in Report::processes order: the main one first
  JobReport job;
  std::vector<double> start_s, end_s;
  std::vector<uint64_t> heap_at_peak_bytes;
  std::vector<uint64_t> event_at_peak;  // 0: nothing to replay
  std::vector<std::optional<uint64_t>> peak_pss_bytes, peak_uss_bytes;
};

// A job's timeline holds each process's heap at each point: at most this many figures in
// all (a job of 2,000 short processes wrote 53 MB of report.json without a bound), and at
// least this many points, whatever the count of processes.
inline constexpr size_t kMaxJobTimelineValues = 250'000;
inline constexpr size_t kMinJobTimelinePoints = 64;

// `files[main_index]` is the traced command: first in `order`, and in Report::processes.
JobPlan plan_job(const std::vector<std::unique_ptr<TraceFile>>& files, size_t main_index, size_t max_points);

}  // namespace memstage::reports
