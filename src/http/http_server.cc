#include "http/http_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cctype>
#include <mutex>
#include <nlohmann/json.hpp>
#include <variant>

#include "common/metrics.h"
#include "net/stream.h"
#include "net/tls.h"

namespace magnetar::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;

Response Response::json(int status, std::string body) {
  Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

Response Response::error(int status, std::string_view reason) {
  nlohmann::json j = {{"reason", std::string(reason)}};
  // A reason may quote a name from the URL: bytes that are not UTF-8 are replaced.
  return json(status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::optional<std::string> url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

class HttpServer::Impl {
 public:
  Impl(ServerOptions options, log::Logger log)
      : options_(std::move(options)), log_(std::move(log)), acceptor_(io_), tls_acceptor_(io_) {}

  Status listen() {
    boost::system::error_code ec;
    auto address = asio::ip::make_address(options_.address, ec);
    if (ec) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("'{}' is not an IP address", options_.address));
    }
    MAGNETAR_TRY(listen_on(acceptor_, address, options_.port, "HTTP"));
    port_ = acceptor_.local_endpoint().port();
    if (options_.tls) {
      MAGNETAR_TRY(listen_on(tls_acceptor_, address, options_.tls_port, "HTTPS"));
      tls_port_ = tls_acceptor_.local_endpoint().port();
      asio::co_spawn(io_, accept_loop(tls_acceptor_, true), asio::detached);
    }
    asio::co_spawn(io_, accept_loop(acceptor_, false), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
    return Status::OK();
  }

  void stop() {
    if (stopped_.exchange(true)) return;
    asio::post(io_, [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
      tls_acceptor_.close(ec);
    });
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  void route(std::string method, std::string path, Handler h, bool prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    if (prefix) {
      prefixes_.push_back({std::move(method), std::move(path), std::move(h)});
      std::sort(prefixes_.begin(), prefixes_.end(),
                [](const Route& a, const Route& b) { return a.path.size() > b.path.size(); });
    } else {
      exact_[{std::move(method), std::move(path)}] = std::move(h);
    }
  }

  int port() const { return port_; }
  int tls_port() const { return tls_port_; }

 private:
  Status listen_on(tcp::acceptor& acceptor, const asio::ip::address& address, int port,
                   std::string_view what) {
    boost::system::error_code ec;
    tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status(Errc::kUnavailable, fmt::format("cannot listen for {} on {}:{}: {}", what,
                                                    options_.address, port, ec.message()));
    }
    return Status::OK();
  }

  struct Route {
    std::string method;
    std::string path;
    Handler handler;
  };

  // The handler for a request, or an error response (404 / 405).
  std::variant<Handler, Response> find(const Request& r) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = exact_.find({r.method, r.path});
    if (it != exact_.end()) return it->second;
    bool path_known = false;
    for (const auto& [key, h] : exact_) path_known = path_known || key.second == r.path;
    for (const Route& route : prefixes_) {
      if (r.path.rfind(route.path, 0) != 0) continue;
      if (route.method == r.method) return route.handler;
      path_known = true;
    }
    if (path_known) return Response::error(405, "Method Not Allowed");
    return Response::error(404, "Not Found");
  }

  Task<void> accept_loop(tcp::acceptor& acceptor, bool tls) {
    while (true) {
      boost::system::error_code ec;
      tcp::socket socket(io_);
      co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        continue;
      }
      if (tls) {
        asio::co_spawn(io_, tls_session(std::move(socket)), asio::detached);
      } else {
        asio::co_spawn(io_, session(std::move(socket)), asio::detached);
      }
    }
  }

  static Request convert(const bhttp::request<bhttp::string_body>& req) {
    Request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    std::string_view target = r.target;
    size_t q = target.find('?');
    r.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) {
      std::string_view query = target.substr(q + 1);
      while (!query.empty()) {
        size_t amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        size_t eq = pair.find('=');
        auto key = url_decode(pair.substr(0, eq));
        auto value = url_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
        if (key && value && !key->empty()) r.query[*key] = *value;
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
      }
    }
    for (const auto& field : req) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      r.headers[name] = std::string(field.value());
    }
    r.body = req.body();
    return r;
  }

  Task<void> session(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    co_await serve(stream, "");
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  Task<void> tls_session(tcp::socket socket) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)),
                                                options_.tls->native());
    auto& lowest = beast::get_lowest_layer(stream);
    boost::system::error_code ec;
    const auto remote = lowest.socket().remote_endpoint(ec);
    lowest.expires_after(options_.tls_handshake_timeout);
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      log_.warn("dropping HTTPS client {}:{}: TLS handshake failed: {}",
                remote.address().to_string(), remote.port(),
                ec == beast::error::timeout ? std::string("timed out") : net::describe_error(ec));
      co_return;
    }
    co_await serve(stream, net::verified_peer_common_name(stream.native_handle()));
    // close_notify, briefly: the client may be gone already.
    lowest.expires_after(std::chrono::seconds(1));
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    boost::system::error_code ignored;
    lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  // Requests of one connection until it closes, idles out or fails (plain or TLS).
  template <typename Stream>
  Task<void> serve(Stream& stream, std::string tls_common_name) {
    beast::flat_buffer buffer;
    while (true) {
      boost::system::error_code ec;
      beast::get_lowest_layer(stream).expires_after(options_.idle_timeout);
      bhttp::request_parser<bhttp::string_body> parser;
      parser.body_limit(options_.max_body_bytes);
      co_await bhttp::async_read(stream, buffer, parser,
                                 asio::redirect_error(asio::use_awaitable, ec));
      Response response;
      bool keep_alive = false;
      unsigned version = 11;
      if (ec == bhttp::error::body_limit) {
        response = Response::error(413, "request body too large");
      } else if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
                 ec == asio::error::eof || ec == asio::error::connection_reset ||
                 ec == asio::ssl::error::stream_truncated) {
        break;
      } else if (ec) {
        response = Response::error(400, fmt::format("malformed HTTP request: {}", ec.message()));
      } else {
        const auto& req = parser.get();
        keep_alive = req.keep_alive();
        version = req.version();
        Request request = convert(req);
        request.tls_common_name = tls_common_name;
        auto found = find(request);
        if (std::holds_alternative<Response>(found)) {
          response = std::get<Response>(std::move(found));
        } else {
          Handler handler = std::get<Handler>(std::move(found));
          try {
            response = co_await handler(request);
          } catch (const std::exception& e) {
            log_.error("handler for {} {} threw: {}", request.method, request.path, e.what());
            response = Response::error(500, "internal error");
          }
        }
      }
      bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(response.status), version};
      res.set(bhttp::field::server, "Magnetar");
      res.set(bhttp::field::content_type, response.content_type);
      for (const auto& [k, v] : response.headers) res.set(k, v);
      res.keep_alive(keep_alive);
      res.body() = std::move(response.body);
      res.prepare_payload();
      co_await bhttp::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !keep_alive) break;
    }
  }

  ServerOptions options_;
  log::Logger log_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_;
  tcp::acceptor tls_acceptor_;  // open only with options_.tls
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  int port_ = 0;
  int tls_port_ = 0;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Handler> exact_;
  std::vector<Route> prefixes_;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  port_ = impl_->port();
  tls_port_ = impl_->tls_port();
}

HttpServer::~HttpServer() {
  stop();
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(ServerOptions options, log::Logger log) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(log));
  MAGNETAR_TRY(impl->listen());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::route(std::string method, std::string path, Handler handler) {
  impl_->route(std::move(method), std::move(path), std::move(handler), false);
}

void HttpServer::route_prefix(std::string method, std::string prefix, Handler handler) {
  impl_->route(std::move(method), std::move(prefix), std::move(handler), true);
}

void HttpServer::stop() {
  if (impl_) impl_->stop();
}

void add_metrics_route(HttpServer& server, MetricsGate gate) {
  server.route("GET", "/metrics", [gate = std::move(gate)](const Request& req) -> Task<Response> {
    if (gate) {
      if (auto refused = gate(req)) co_return std::move(*refused);
    }
    Response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics::default_registry().expose();
    co_return r;
  });
}

std::string url_encode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::optional<std::vector<std::string>> path_segments(std::string_view path,
                                                      std::string_view prefix) {
  std::vector<std::string> out;
  std::string_view rest = path.substr(std::min(prefix.size(), path.size()));
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) return out;
  while (true) {
    const size_t slash = rest.find('/');
    auto decoded = url_decode(rest.substr(0, slash));
    if (!decoded) return std::nullopt;
    out.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace magnetar::http
