#include "harness/serve/report_server.h"

#include <dlfcn.h>

#include "harness/cli/cli_error.h"
#include "harness/serve/http_endpoint.h"
#include "reports/render/export/pprof.h"
#include "reports/render/html/render_html.h"
#include "reports/render/json/json_report.h"
#include "reports/render/prometheus/metrics_text.h"

namespace memstage::harness {

namespace {

std::string pprof_heap(const reports::Report& r) { return reports::render_pprof_heap(r, "inuse_space"); }
std::string pprof_allocs(const reports::Report& r) { return reports::render_pprof_heap(r, "alloc_space"); }

// What is served, where (docs/serving.md lists them).
std::vector<Route> routes() {
  return {{"/metrics", reports::kPrometheusContentType, reports::render_prometheus},
          {"/debug/pprof/heap", "application/octet-stream", pprof_heap},
          {"/debug/pprof/allocs", "application/octet-stream", pprof_allocs},
          {"/report.json", "application/json", reports::render_json},
          {"/", "text/html; charset=utf-8", reports::render_html}};
}

}  // namespace

ReportServer::ReportServer(const ServeOptions& options, const std::string& module_path, const std::string& flag)
    : host_(options.host) {
  module_ = dlopen(module_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module_) throw CliError(flag + ": cannot load " + module_path + ": " + dlerror());
  const auto bind = reinterpret_cast<BindHttpEndpoint>(dlsym(module_, kBindHttpEndpointSymbol));
  if (!bind) throw CliError(flag + ": " + module_path + " has no " + kBindHttpEndpointSymbol);
  std::string error;
  endpoint_.reset(bind(options, routes(), error));
  if (!endpoint_) throw CliError(flag + " " + url_host_port(options.host, options.port) + ": cannot listen there: " + error);
}

ReportServer::~ReportServer() {
  endpoint_.reset();
  cache_.reset();
  // The module stays mapped: its code may still be on a stack of a thread it joined, and
  // it is unloaded with the process anyway.
}

int ReportServer::port() const { return endpoint_->port(); }

std::string ReportServer::host_port() const { return url_host_port(host_, port()); }

void ReportServer::start(ReportCache::Source source) {
  cache_ = std::make_unique<ReportCache>(std::move(source));
  endpoint_->start([cache = cache_.get()](std::string& why_none) { return cache->latest(why_none); });
}

}  // namespace memstage::harness
