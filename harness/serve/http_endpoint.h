// The HTTP side of `--serve`, in a module of its own (libmemstage_http.so, loaded with dlopen
// when --serve is given): cpp-httplib in Debian is a shared library linking OpenSSL, zlib and
// brotli, which every start of every other command would otherwise map and relocate
// (docs/architecture.md). What crosses into it: the routes and a way to the latest report.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/serve/serve_options.h"
#include "reports/model/report_model.h"

namespace memstage::harness {

// A path, its content type, and its body made from a report.
struct Route {
  std::string path;
  std::string content_type;
  std::string (*render)(const reports::Report&) = nullptr;
};

// The latest report, or none (and `why_none` says why).
using LatestReport = std::function<std::shared_ptr<const reports::Report>(std::string& why_none)>;

class HttpEndpoint {
 public:
  virtual ~HttpEndpoint() = default;  // stops serving, waiting out the requests under way
  virtual int port() const = 0;
  // Answers from now on: each route's body rendered once per report.
  virtual void start(LatestReport latest) = 0;
};

// The module's one entry point: an endpoint bound to `options` (port 0: any free one) with
// `routes`, or null and `error` saying why ("Address already in use").
using BindHttpEndpoint = HttpEndpoint* (*)(const ServeOptions& options, const std::vector<Route>& routes,
                                           std::string& error);
inline constexpr const char* kBindHttpEndpointSymbol = "memstage_bind_http_endpoint";
inline constexpr const char* kHttpModuleName = "libmemstage_http.so";

}  // namespace memstage::harness
