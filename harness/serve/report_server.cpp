#include "harness/serve/report_server.h"

#include <errno.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "harness/cli/cli_error.h"
#include "harness/serve/bounded_pool.h"
#include "reports/render/export/pprof.h"
#include "reports/render/html/render_html.h"
#include "reports/render/json/json_report.h"
#include "reports/render/prometheus/metrics_text.h"

namespace memstage::harness {

namespace {

// A few threads: the answers are rendered once per report, so a request is a copy. A
// client that connects and sends nothing holds one for kIdle_s at most.
constexpr size_t kThreads = 4;
constexpr size_t kQueuedConnections = 16;
constexpr time_t kIdle_s = 2;       // waiting for a request on an open connection
constexpr time_t kReadWrite_s = 5;  // one read or write of a request under way
constexpr size_t kMaxRequestBodyBytes = 4096;  // GET has none

std::string pprof_heap(const reports::Report& r) { return reports::render_pprof_heap(r, "inuse_space"); }
std::string pprof_allocs(const reports::Report& r) { return reports::render_pprof_heap(r, "alloc_space"); }

// The same time whatever the first differing byte: a token is not guessed a byte at a time.
bool same_secret(const std::string& given, const std::string& secret) {
  if (given.size() != secret.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < given.size(); ++i) differ |= static_cast<unsigned char>(given[i] ^ secret[i]);
  return differ == 0;
}

// One path's body, rendered once per report however many ask for it.
struct Endpoint {
  const char* content_type = nullptr;
  std::string (*render)(const reports::Report&) = nullptr;
  std::mutex mutex;
  std::shared_ptr<const reports::Report> of;
  std::string body;
};

// Read-only: GET and HEAD, nothing else; with a token, only requests bearing it.
bool refused(const std::string& token, const httplib::Request& request, httplib::Response& response) {
  if (request.method != "GET" && request.method != "HEAD") {
    response.status = 405;
    response.set_header("Allow", "GET, HEAD");
    response.set_content("memstage serves GET only\n", "text/plain");
    return true;
  }
  if (!token.empty() && !same_secret(request.get_header_value("Authorization"), "Bearer " + token)) {
    response.status = 401;
    response.set_header("WWW-Authenticate", "Bearer");
    response.set_content("a bearer token is needed (Authorization: Bearer ...)\n", "text/plain");
    return true;
  }
  return false;
}

void answer_failure(const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
  std::string what = "unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  response.status = 500;
  response.set_content("memstage could not answer: " + what + "\n", "text/plain");
}

}  // namespace

struct ReportServer::Impl {
  std::string token;
  httplib::Server server;
  std::map<std::string, Endpoint> endpoints;
  std::unique_ptr<ReportCache> cache;
  std::thread listener;
  std::atomic<bool> listened{false};  // listen_after_bind has returned

  void route(const std::string& path, const char* content_type, std::string (*render)(const reports::Report&)) {
    Endpoint& endpoint = endpoints.try_emplace(path).first->second;
    endpoint.content_type = content_type;
    endpoint.render = render;
    server.Get(path, [this, &endpoint](const httplib::Request&, httplib::Response& response) {
      answer(endpoint, response);
    });
  }

  void answer(Endpoint& endpoint, httplib::Response& response) {
    std::string why_none;
    const auto report = cache ? cache->latest(why_none) : nullptr;
    if (!report) {
      response.status = 503;
      response.set_header("Retry-After", "1");
      response.set_content((cache ? why_none : "not serving yet") + "\n", "text/plain");
      return;
    }
    std::lock_guard lock(endpoint.mutex);
    if (endpoint.of != report) {
      endpoint.body = endpoint.render(*report);
      endpoint.of = report;
    }
    response.set_content(endpoint.body, endpoint.content_type);
  }

  // Binds; the port taken, or -1 (errno says why).
  int bind(const ServeOptions& options) {
    server.new_task_queue = [] { return new BoundedPool(kThreads, kQueuedConnections); };
    server.set_keep_alive_timeout(kIdle_s);
    server.set_read_timeout(kReadWrite_s, 0);
    server.set_write_timeout(kReadWrite_s, 0);
    server.set_payload_max_length(kMaxRequestBodyBytes);
    server.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
      return refused(token, request, response) ? httplib::Server::HandlerResponse::Handled
                                               : httplib::Server::HandlerResponse::Unhandled;
    });
    server.set_exception_handler(answer_failure);
    route("/metrics", reports::kPrometheusContentType, reports::render_prometheus);
    route("/debug/pprof/heap", "application/octet-stream", pprof_heap);
    route("/debug/pprof/allocs", "application/octet-stream", pprof_allocs);
    route("/report.json", "application/json", reports::render_json);
    route("/", "text/html; charset=utf-8", reports::render_html);
    errno = 0;
    if (options.port == 0) return server.bind_to_any_port(options.host);
    return server.bind_to_port(options.host, options.port) ? options.port : -1;
  }
};

ReportServer::ReportServer(const ServeOptions& options, const std::string& flag) : impl_(std::make_unique<Impl>()) {
  impl_->token = options.token;
  port_ = impl_->bind(options);
  if (port_ < 0) {
    const int error = errno;
    throw CliError(flag + " " + url_host_port(options.host, options.port) + ": cannot listen there" +
                   (error ? std::string(": ") + strerror(error) : std::string()));
  }
}

ReportServer::~ReportServer() {
  // stop() stops a loop already listening only: asked again until the listener returns.
  while (impl_->listener.joinable() && !impl_->listened) {
    impl_->server.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (impl_->listener.joinable()) impl_->listener.join();
}

void ReportServer::start(ReportCache::Source source) {
  impl_->cache = std::make_unique<ReportCache>(std::move(source));
  impl_->listener = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->listened = true;
  });
}

}  // namespace memstage::harness
