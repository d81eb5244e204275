#pragma once
// A small HTTP/1.1 server on Boost.Beast for the servers' web ports: Prometheus `/metrics`
// on every server now, the broker's admin REST API and lookup later.
//
// Handlers are registered by method and exact path or path prefix, and run on the server's
// event loop as coroutines; they must not block. Keep-alive is supported; request bodies are
// bounded (`max_body_bytes`) and every connection has an idle deadline.
//
// With a TLS context, a second listener serves the same routes over HTTPS (the broker's
// webServicePortTls); its handshake is bounded by `tls_handshake_timeout`.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"

namespace magnetar::net {
class TlsContext;
}

namespace magnetar::http {

struct Request {
  std::string method;                          // "GET", "PUT", ...
  std::string target;                          // path and query, as received
  std::string path;                            // target without the query
  std::map<std::string, std::string> query;    // decoded query parameters
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  // HTTPS: the verified client certificate's CN (net::verified_peer_common_name); "" else.
  std::string tls_common_name;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::map<std::string, std::string> headers;  // extra headers (e.g. Location)

  static Response json(int status, std::string body);
  // Pulsar's error shape: {"reason": "..."}.
  static Response error(int status, std::string_view reason);
};

using Handler = std::function<Task<Response>(const Request&)>;

struct ServerOptions {
  std::string address = "127.0.0.1";
  int port = 8080;  // 0 picks a free port
  size_t max_body_bytes = 8 * 1024 * 1024;
  std::chrono::seconds idle_timeout{60};
  // HTTPS on `tls_port` (0 picks a free port) when set: a server context (net/tls.h).
  std::shared_ptr<net::TlsContext> tls;
  int tls_port = 0;
  std::chrono::milliseconds tls_handshake_timeout{10'000};
};

class HttpServer {
 public:
  // Binds and starts serving on its own thread. Routes may be added before or after start.
  static Result<std::unique_ptr<HttpServer>> start(ServerOptions options, log::Logger log);
  ~HttpServer();

  // Exact path match, e.g. route("GET", "/metrics", ...).
  void route(std::string method, std::string path, Handler handler);
  // Prefix match (longest wins after exact routes), e.g. "/admin/v2/".
  void route_prefix(std::string method, std::string prefix, Handler handler);

  int port() const { return port_; }
  // The HTTPS port, or 0 without TLS.
  int tls_port() const { return tls_port_; }
  void stop();

 private:
  class Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  int tls_port_ = 0;
};

// Serves GET /metrics from the process-wide metrics registry (Prometheus text format 0.0.4).
// Answers instead of the metrics (e.g. 401), or nullopt to serve them.
using MetricsGate = std::function<std::optional<Response>(const Request&)>;
void add_metrics_route(HttpServer& server, MetricsGate gate = {});

// Percent-decoding of a URL component ('+' stays '+'); nullopt on a malformed escape.
std::optional<std::string> url_decode(std::string_view s);
// Percent-encoding of a URL component: every byte but [A-Za-z0-9-._~] becomes %XX.
std::string url_encode(std::string_view s);

// The decoded '/'-separated components of `path` after `prefix` (a trailing '/' ignored):
// "/admin/v2/tenants/a%2Fb/x" after "/admin/v2/tenants/" -> {"a/b", "x"}. nullopt on a
// malformed escape.
std::optional<std::vector<std::string>> path_segments(std::string_view path,
                                                      std::string_view prefix);

}  // namespace magnetar::http
