// libmemstage_http.so: the server of `--serve` on cpp-httplib (http_endpoint.h says why a
// module). Read-only (GET and HEAD), behind a bearer token when given, on a few threads with
// read and write timeouts (docs/serving.md).
#include "harness/serve/http_endpoint.h"

#include <errno.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "harness/serve/bounded_pool.h"

namespace memstage::harness {

namespace {

// A few threads: the answers are rendered once per report, so a request is a copy. A
// client that connects and sends nothing holds one for kIdle_s at most.
constexpr size_t kThreads = 4;
constexpr size_t kQueuedConnections = 16;
constexpr time_t kIdle_s = 2;       // waiting for a request on an open connection
constexpr time_t kReadWrite_s = 5;  // one read or write of a request under way
constexpr size_t kMaxRequestBodyBytes = 4096;  // GET has none

// The same time whatever the first differing byte: a token is not guessed a byte at a time.
bool same_secret(const std::string& given, const std::string& secret) {
  if (given.size() != secret.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < given.size(); ++i) differ |= static_cast<unsigned char>(given[i] ^ secret[i]);
  return differ == 0;
}

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

// One path's body, rendered once per report however many ask for it.
struct Endpoint {
  Route route;
  std::mutex mutex;
  // Weak: an older report is freed once the cache has a newer one, rendered or not.
  std::weak_ptr<const reports::Report> of;
  std::string body;
};

class Server final : public HttpEndpoint {
 public:
  Server(const ServeOptions& options, const std::vector<Route>& routes) : token_(options.token) {
    server_.new_task_queue = [] { return new BoundedPool(kThreads, kQueuedConnections); };
    server_.set_keep_alive_timeout(kIdle_s);
    server_.set_read_timeout(kReadWrite_s, 0);
    server_.set_write_timeout(kReadWrite_s, 0);
    server_.set_payload_max_length(kMaxRequestBodyBytes);
    server_.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
      return refused(token_, request, response) ? httplib::Server::HandlerResponse::Handled
                                                : httplib::Server::HandlerResponse::Unhandled;
    });
    server_.set_exception_handler(answer_failure);
    for (const Route& route : routes) add(route);
  }

  ~Server() override {
    // stop() stops a loop already listening only: asked again until the listener returns.
    while (listener_.joinable() && !listened_) {
      server_.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (listener_.joinable()) listener_.join();
  }

  // The port taken, or -1 (errno says why).
  int bind(const ServeOptions& options) {
    errno = 0;
    if (options.port == 0) port_ = server_.bind_to_any_port(options.host);
    else port_ = server_.bind_to_port(options.host, options.port) ? options.port : -1;
    return port_;
  }

  int port() const override { return port_; }

  void start(LatestReport latest) override {
    latest_ = std::move(latest);
    listener_ = std::thread([this] {
      server_.listen_after_bind();
      listened_ = true;
    });
  }

 private:
  void add(const Route& route) {
    Endpoint& endpoint = endpoints_.try_emplace(route.path).first->second;
    endpoint.route = route;
    server_.Get(route.path, [this, &endpoint](const httplib::Request&, httplib::Response& response) {
      answer(endpoint, response);
    });
  }

  void answer(Endpoint& endpoint, httplib::Response& response) {
    std::string why_none = "not serving yet";
    const auto report = latest_ ? latest_(why_none) : nullptr;
    if (!report) {
      response.status = 503;
      response.set_header("Retry-After", "1");
      response.set_content(why_none + "\n", "text/plain");
      return;
    }
    std::lock_guard lock(endpoint.mutex);
    if (endpoint.of.lock() != report) {
      endpoint.body = endpoint.route.render(*report);
      endpoint.of = report;
    }
    response.set_content(endpoint.body, endpoint.route.content_type);
  }

  std::string token_;
  httplib::Server server_;
  std::map<std::string, Endpoint> endpoints_;
  LatestReport latest_;
  int port_ = -1;
  std::thread listener_;
  std::atomic<bool> listened_{false};  // listen_after_bind has returned
};

}  // namespace

}  // namespace memstage::harness

extern "C" __attribute__((visibility("default"))) memstage::harness::HttpEndpoint* memstage_bind_http_endpoint(
    const memstage::harness::ServeOptions& options, const std::vector<memstage::harness::Route>& routes,
    std::string& error) {
  try {
    auto server = std::make_unique<memstage::harness::Server>(options, routes);
    if (server->bind(options) < 0) {
      error = errno ? strerror(errno) : "cannot bind";
      return nullptr;
    }
    return server.release();
  } catch (const std::exception& e) {
    error = e.what();
    return nullptr;
  }
}
