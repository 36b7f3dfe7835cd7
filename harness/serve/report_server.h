// memstage's HTTP endpoint (`--serve`): the run so far for Prometheus (/metrics), pprof's
// readers (/debug/pprof/heap, /debug/pprof/allocs), and people (/, /report.json), answered
// by memstage's threads, never the traced program's. Read-only (GET and HEAD), behind a
// bearer token when given, on a few threads with read and write timeouts (docs/serving.md).
#pragma once

#include <memory>
#include <string>

#include "harness/serve/report_cache.h"
#include "harness/serve/serve_options.h"

namespace memstage::harness {

class ReportServer {
 public:
  // Binds at once: a port in use is a CliError naming it, said before the program starts.
  // `flag` names the option in messages ("run: --serve").
  ReportServer(const ServeOptions& options, const std::string& flag);
  ~ReportServer();  // stops serving, waiting out the requests under way (their timeouts)
  ReportServer(const ReportServer&) = delete;
  ReportServer& operator=(const ReportServer&) = delete;

  int port() const { return port_; }
  // Serves the reports `source` gives (report_so_far of the run's folder) from now on.
  void start(ReportCache::Source source);

 private:
  // The server and its routes (report_server.cpp): cpp-httplib's header, which brings
  // <resolv.h>'s macros, stays out of the commands that include this one.
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace memstage::harness
