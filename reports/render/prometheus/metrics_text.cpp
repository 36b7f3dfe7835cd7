#include "reports/render/prometheus/metrics_text.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "reports/render/frame_label.h"

namespace memstage::reports {

namespace {

// One metric family: its HELP and TYPE lines, then its samples, as the format asks
// (a family's samples together, after its HELP and TYPE).
class Family {
 public:
  Family(std::string& out, const char* name, const char* type, const char* help) : out_(out), name_(name) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(const std::string& labels, uint64_t value) { out_ += fmt::format("{}{{{}}} {}\n", name_, labels, value); }
  void sample(const std::string& labels, double value) { out_ += fmt::format("{}{{{}}} {}\n", name_, labels, value); }

 private:
  std::string& out_;
  const char* name_;
};

std::string label(const char* name, const std::string& value) {
  return fmt::format("{}=\"{}\"", name, prometheus_label_value(value));
}

std::string with(const std::string& labels, const std::string& more) { return labels.empty() ? more : labels + "," + more; }

// pid and command, then rank and host where known: what tells one process's series from
// another's in a job.
std::string process_labels(const ProcessReport& p) {
  std::string command;
  for (const auto& word : p.command) command += (command.empty() ? "" : " ") + word;
  std::string labels = label("pid", std::to_string(p.pid)) + "," + label("command", command);
  if (p.rank) labels += "," + label("rank", std::to_string(*p.rank));
  if (!p.host.empty()) labels += "," + label("host", p.host);
  return labels;
}

// The process's heap now: the job's latest instant, or the one process's latest sample.
uint64_t live_heap_bytes(const Report& report, size_t process) {
  if (!report.job.timeline.empty()) {
    const auto& by_process = report.job.timeline.back().process_heap_bytes;
    return process < by_process.size() ? by_process[process] : 0;
  }
  return process == 0 && !report.timeline.empty() ? report.timeline.back().heap_bytes : 0;
}

void add_process_figures(const Report& report, std::string& out) {
  Family live(out, "memstage_heap_live_bytes", "gauge", "Heap bytes allocated and not freed, at the latest sample.");
  for (size_t i = 0; i < report.processes.size(); ++i) live.sample(process_labels(report.processes[i]), live_heap_bytes(report, i));
  Family peak(out, "memstage_heap_peak_bytes", "gauge", "The heap's highest so far.");
  for (const auto& p : report.processes) peak.sample(process_labels(p), p.peak_heap_bytes);
  Family rss_peak(out, "memstage_rss_peak_bytes", "gauge", "Resident memory's highest so far, the tracer's included.");
  for (const auto& p : report.processes) rss_peak.sample(process_labels(p), p.peak_rss_bytes);
  Family pss_peak(out, "memstage_pss_peak_bytes", "gauge",
                  "Proportional set size's highest so far (a page shared by n processes counts 1/n).");
  for (const auto& p : report.processes) {
    if (p.peak_pss_bytes) pss_peak.sample(process_labels(p), *p.peak_pss_bytes);
  }
}

// Figures the model has for the run as a whole, or for the traced process only: labelled
// with the traced process (the first).
void add_run_figures(const Report& report, const std::string& labels, std::string& out) {
  const TimelinePoint now = report.timeline.empty() ? TimelinePoint{} : report.timeline.back();
  Family rss(out, "memstage_rss_bytes", "gauge", "Resident memory at the latest sample, the tracer's included.");
  rss.sample(labels, now.rss_bytes);
  Family tracer(out, "memstage_tracer_bytes", "gauge", "The tracer's own resident memory at the latest sample.");
  tracer.sample(labels, now.tracer_bytes);
  Family allocations(out, "memstage_allocations_total", "counter", "Allocation calls (malloc, new, ...), every process.");
  allocations.sample(labels, report.totals.allocations);
  Family allocated(out, "memstage_allocated_bytes_total", "counter", "Bytes asked for by allocation calls, every process.");
  allocated.sample(labels, report.totals.bytes_allocated);
  Family lost(out, "memstage_lost_events_total", "counter", "Events the tracer could not record.");
  lost.sample(labels, report.lost_events);
  if (report.ram_limit_bytes) {  // alert on memstage_rss_bytes / memstage_ram_limit_bytes (docs/serving.md)
    Family limit(out, "memstage_ram_limit_bytes", "gauge", "The RAM limit the run was given (--ram-limit; auto: its cgroup's).");
    limit.sample(labels, *report.ram_limit_bytes);
  }
}

// A stage path that ran many times is one series, at its highest peak.
void add_stages(const Report& report, const std::string& labels, std::string& out) {
  std::vector<std::pair<std::string, uint64_t>> peaks;
  std::unordered_map<std::string, size_t> index_of_path;
  for (const auto& s : report.stages) {
    const auto [it, fresh] = index_of_path.try_emplace(s.path, peaks.size());
    if (fresh) peaks.emplace_back(s.path, 0);
    auto& peak = peaks[it->second].second;
    peak = std::max(peak, s.figures.peak_heap_bytes);
  }
  std::stable_sort(peaks.begin(), peaks.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (peaks.size() > kMetricsStages) peaks.resize(kMetricsStages);
  Family family(out, "memstage_stage_peak_heap_bytes", "gauge", "The heap's highest while the stage was open.");
  for (const auto& [path, bytes] : peaks) family.sample(with(labels, label("stage", path)), bytes);
}

// Stacks named by their allocation site, those of one site summed: one series per site.
void add_growth(const Report& report, const std::string& labels, std::string& out) {
  std::vector<std::pair<std::string, double>> rates;
  std::unordered_map<std::string, size_t> index_of_site;
  for (const auto& g : report.growth ? report.growth->stacks : std::vector<GrowingStack>{}) {
    const auto [it, fresh] = index_of_site.try_emplace(site_label(report, g.stack), rates.size());
    if (fresh) rates.emplace_back(it->first, 0.0);
    rates[it->second].second += g.bytes_per_s;
  }
  std::stable_sort(rates.begin(), rates.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (rates.size() > kMetricsGrowthSites) rates.resize(kMetricsGrowthSites);
  Family family(out, "memstage_growth_bytes_per_second", "gauge",
                "How fast the live bytes of the fastest-growing allocation sites grow (least squares).");
  for (const auto& [site, rate] : rates) family.sample(with(labels, label("site", site)), rate);
}

}  // namespace

std::string prometheus_label_value(const std::string& value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') escaped += "\\\\";
    else if (c == '"') escaped += "\\\"";
    else if (c == '\n') escaped += "\\n";
    else escaped += c;
  }
  return escaped;
}

std::string render_prometheus(const Report& report) {
  std::string out;
  add_process_figures(report, out);
  const std::string labels = report.processes.empty() ? std::string() : process_labels(report.processes.front());
  add_run_figures(report, labels, out);
  add_stages(report, labels, out);
  add_growth(report, labels, out);
  return out;
}

}  // namespace memstage::reports
