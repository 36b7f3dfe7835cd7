// memstage's HTTP endpoint (`--serve`): the run so far for Prometheus (/metrics), pprof's
// readers (/debug/pprof/heap, /debug/pprof/allocs), and people (/, /report.json), answered
// by memstage's threads, never the traced program's. The server itself is the module
// libmemstage_http.so (http_endpoint.h), loaded here; the routes and the report are ours.
#pragma once

#include <memory>
#include <string>

#include "harness/serve/report_cache.h"
#include "harness/serve/serve_options.h"

namespace memstage::harness {

class HttpEndpoint;

class ReportServer {
 public:
  // Loads the module at `module_path` and binds at once: a port in use is a CliError naming
  // it, said before the program starts. `flag` names the option in messages ("run: --serve").
  ReportServer(const ServeOptions& options, const std::string& module_path, const std::string& flag);
  ~ReportServer();  // stops serving, waiting out the requests under way (their timeouts)
  ReportServer(const ReportServer&) = delete;
  ReportServer& operator=(const ReportServer&) = delete;

  int port() const;
  std::string host_port() const;  // "127.0.0.1:9100", the port the one taken
  // Serves the reports `source` gives (report_so_far of the run's folder) from now on.
  void start(ReportCache::Source source);

 private:
  std::string host_;
  void* module_ = nullptr;  // dlopen's handle, closed last
  std::unique_ptr<ReportCache> cache_;
  std::unique_ptr<HttpEndpoint> endpoint_;  // stopped before the cache it reads goes
};

}  // namespace memstage::harness
