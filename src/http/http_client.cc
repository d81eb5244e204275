#include "http/http_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <charconv>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "net/stream.h"
#include "net/tls.h"

namespace magnetar::http {

namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class ClientCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "http_client"; }

  std::string message(int c) const override {
    switch (static_cast<ClientError>(c)) {
      case ClientError::kOk:
        return "ok";
      case ClientError::kBadUrl:
        return "bad URL";
      case ClientError::kUnsupportedScheme:
        return "unsupported URL scheme";
      case ClientError::kResolveFailed:
        return "host name does not resolve";
      case ClientError::kConnectionRefused:
        return "connection refused";
      case ClientError::kConnectionFailed:
        return "connection failed";
      case ClientError::kTimeout:
        return "timed out";
      case ClientError::kMalformedResponse:
        return "malformed HTTP response";
      case ClientError::kResponseTooLarge:
        return "HTTP response too large";
      case ClientError::kTooManyRedirects:
        return "too many redirects";
      case ClientError::kTlsConfiguration:
        return "bad TLS configuration";
      case ClientError::kTlsHandshakeFailed:
        return "TLS handshake failed";
    }
    return "unknown http client error";
  }

  std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<ClientError>(c)) {
      case ClientError::kOk:
        return make_error_condition(Errc::kOk);
      case ClientError::kBadUrl:
        return make_error_condition(Errc::kInvalidArgument);
      case ClientError::kUnsupportedScheme:
        return make_error_condition(Errc::kNotSupported);
      case ClientError::kResolveFailed:
      case ClientError::kConnectionRefused:
      case ClientError::kConnectionFailed:
        return make_error_condition(Errc::kUnavailable);
      case ClientError::kTimeout:
        return make_error_condition(Errc::kTimeout);
      case ClientError::kMalformedResponse:
        return make_error_condition(Errc::kCorruption);
      case ClientError::kResponseTooLarge:
        return make_error_condition(Errc::kResourceExhausted);
      case ClientError::kTooManyRedirects:
      case ClientError::kTlsConfiguration:
        return make_error_condition(Errc::kInvalidArgument);
      case ClientError::kTlsHandshakeFailed:
        return make_error_condition(Errc::kUnavailable);
    }
    return make_error_condition(Errc::kInternal);
  }
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Status bad_url(std::string_view text, std::string_view why) {
  return Status(ClientError::kBadUrl, fmt::format("bad URL '{}': {}", text, why));
}

uint16_t default_port(std::string_view scheme) {
  return scheme == "https" ? 443 : 80;
}

// "host" or "host:port" for the Host header: the port only when it is not the default.
std::string host_header(const Url& url) {
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  if (url.port != default_port(url.scheme)) host += ":" + std::to_string(url.port);
  return host;
}

bool is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// What went wrong while reading a response, as a client error.
ClientError read_error(const boost::system::error_code& ec) {
  if (ec == bhttp::error::body_limit || ec == bhttp::error::header_limit ||
      ec == bhttp::error::buffer_overflow) {
    return ClientError::kResponseTooLarge;
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category() &&
      ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    return ClientError::kMalformedResponse;
  }
  return ClientError::kConnectionFailed;
}

// What one exchange shares with its deadline timer: the timer's handler can run after the
// awaiting coroutine has moved on, so it touches only this (kept alive by the handler).
// Expiry cancels whatever is under way: the resolve, the connect, or the stream's I/O.
struct Exchange {
  explicit Exchange(const Executor& executor) : resolver(executor), socket(executor) {}
  void expire() {
    expired = true;
    resolver.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
    if (stream) stream->close();
  }
  tcp::resolver resolver;
  tcp::socket socket;                   // until connected, then moved into `stream`
  std::unique_ptr<net::Stream> stream;  // plain TCP or TLS
  bool expired = false;
};

}  // namespace

const std::error_category& client_category() noexcept {
  static const ClientCategory category;
  return category;
}

std::error_code make_error_code(ClientError e) noexcept {
  return {static_cast<int>(e), client_category()};
}

std::string Url::origin() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return fmt::format("{}://{}:{}", scheme, h, port);
}

Result<Url> parse_url(std::string_view text) {
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0) return bad_url(text, "no scheme");
  Url url;
  url.scheme = lower(text.substr(0, sep));
  if (!std::all_of(url.scheme.begin(), url.scheme.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
      })) {
    return bad_url(text, "bad scheme");
  }
  std::string_view rest = text.substr(sep + 3);
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  const size_t end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  std::string_view target = end == std::string_view::npos ? "" : rest.substr(end);
  if (authority.find('@') != std::string_view::npos) {
    return bad_url(text, "credentials in URLs are not supported");
  }
  std::string_view port_text;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad_url(text, "unterminated IPv6 address");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad_url(text, "junk after IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) return bad_url(text, "empty port");
    }
  } else {
    const size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return bad_url(text, "empty port");
    }
  }
  if (url.host.empty()) return bad_url(text, "no host");
  if (url.host.find_first_of(" \t\r\n/") != std::string::npos) return bad_url(text, "bad host");
  url.port = default_port(url.scheme);
  if (!port_text.empty()) {
    unsigned port = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return bad_url(text, "bad port");
    }
    url.port = static_cast<uint16_t>(port);
  }
  if (target.find_first_of(" \t\r\n") != std::string_view::npos) {
    return bad_url(text, "blanks in the path");
  }
  url.target = target.empty() || target[0] == '?' ? "/" + std::string(target) : std::string(target);
  return url;
}

Result<Url> resolve_location(const Url& base, std::string_view location) {
  if (size_t hash = location.find('#'); hash != std::string_view::npos) {
    location = location.substr(0, hash);
  }
  if (location.empty()) return bad_url(location, "empty redirect location");
  if (location.find("://") != std::string_view::npos) return parse_url(location);
  if (location.starts_with("//")) return parse_url(base.scheme + ":" + std::string(location));
  Url url = base;
  if (location[0] == '/') {
    url.target = std::string(location);
  } else {
    std::string_view path = std::string_view(base.target).substr(0, base.target.find('?'));
    url.target = std::string(path.substr(0, path.rfind('/') + 1)) + std::string(location);
  }
  if (url.target.find_first_of(" \t\r\n") != std::string::npos) {
    return bad_url(location, "blanks in the path");
  }
  return url;
}

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

struct HttpClient::TlsState {
  std::once_flag once;
  Status error;
  std::shared_ptr<net::TlsContext> context;
};

HttpClient::HttpClient(ClientOptions options)
    : options_(std::move(options)), tls_(std::make_shared<TlsState>()) {}

Result<std::shared_ptr<net::TlsContext>> HttpClient::tls_context() const {
  std::call_once(tls_->once, [this] {
    net::TlsOptions t;
    t.trust_certs_file = options_.tls_trust_certs_file_path;
    t.allow_insecure = options_.tls_allow_insecure_connection;
    t.validate_hostname = options_.tls_validate_hostname;
    t.certificate_file = options_.tls_certificate_file_path;
    t.private_key_file = options_.tls_private_key_file_path;
    auto made = net::TlsContext::create(net::TlsRole::kClient, t);
    if (made.ok()) {
      tls_->context = std::move(made).value();
    } else {
      tls_->error = Status(ClientError::kTlsConfiguration,
                           fmt::format("HTTPS client: {}", made.status().message()));
    }
  });
  if (!tls_->error.ok()) return tls_->error;
  return tls_->context;
}

Task<Result<HttpResponse>> HttpClient::exchange(const Url& url, const HttpRequest& request,
                                                Clock::time_point deadline) const {
  const std::string what = fmt::format("{} {}", request.method, url.to_string());
  const bool https = url.scheme == "https";
  if (url.scheme != "http" && !https) {
    co_return Status(ClientError::kUnsupportedScheme,
                     fmt::format("{}: only http:// and https:// URLs are supported", what));
  }
  std::shared_ptr<net::TlsContext> tls;
  if (https) {
    auto made = tls_context();
    if (!made.ok()) {
      co_return Status(made.status().code(), fmt::format("{}: {}", what, made.status().message()));
    }
    tls = std::move(made).value();
  }
  Executor executor = co_await asio::this_coro::executor;
  boost::system::error_code ec;

  // One timer bounds everything below: on expiry it cancels the resolve, closes the socket
  // or the stream, and `x->expired` tells the failure that follows from a real one.
  auto x = std::make_shared<Exchange>(executor);
  asio::steady_timer timer(executor);
  timer.expires_at(deadline);
  timer.async_wait([x](const boost::system::error_code& e) {
    if (!e) x->expire();
  });
  struct CancelTimer {
    asio::steady_timer& timer;
    ~CancelTimer() { timer.cancel(); }
  } cancel_timer{timer};
  auto timed_out = [&what](std::string_view doing) {
    return Status(ClientError::kTimeout, fmt::format("{}: timed out {}", what, doing));
  };

  // Resolve: IP literals directly, names through the resolver.
  std::vector<tcp::endpoint> endpoints;
  const asio::ip::address literal = asio::ip::make_address(url.host, ec);
  if (!ec) {
    endpoints.emplace_back(literal, url.port);
  } else {
    ec = {};
    const std::string service = std::to_string(url.port);
    auto results = co_await x->resolver.async_resolve(
        url.host, service, asio::redirect_error(asio::use_awaitable, ec));
    if (x->expired) co_return timed_out("resolving");
    if (ec) {
      co_return Status(ClientError::kResolveFailed,
                       fmt::format("{}: cannot resolve {}: {}", what, url.host, ec.message()));
    }
    for (const auto& entry : results) endpoints.push_back(entry.endpoint());
    if (endpoints.empty()) {
      co_return Status(ClientError::kResolveFailed,
                       fmt::format("{}: {} has no addresses", what, url.host));
    }
  }

  ec = {};
  co_await asio::async_connect(x->socket, endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (x->expired) co_return timed_out("connecting");
  if (ec) {
    if (ec == asio::error::connection_refused) {
      co_return Status(ClientError::kConnectionRefused,
                       fmt::format("{}: connection refused", what));
    }
    co_return Status(ClientError::kConnectionFailed,
                     fmt::format("{}: cannot connect: {}", what, ec.message()));
  }
  x->stream =
      https ? net::tls_stream(std::move(x->socket), tls) : net::tcp_stream(std::move(x->socket));
  net::Stream& stream = *x->stream;
  const Status shaken = co_await stream.handshake(url.host, deadline);
  if (x->expired || shaken.code() == Errc::kTimeout) co_return timed_out("in the TLS handshake");
  if (!shaken.ok()) {
    co_return Status(ClientError::kTlsHandshakeFailed,
                     fmt::format("{}: {}", what, shaken.message()));
  }

  bhttp::request<bhttp::string_body> req;
  const bhttp::verb verb = bhttp::string_to_verb(request.method);
  if (verb == bhttp::verb::unknown) {
    req.method_string(request.method);
  } else {
    req.method(verb);
  }
  req.target(url.target);
  req.version(11);
  req.set(bhttp::field::host, host_header(url));
  req.set(bhttp::field::user_agent, options_.user_agent);
  req.set(bhttp::field::accept, "application/json, */*");
  for (const auto& [k, v] : options_.default_headers) req.set(k, v);
  for (const auto& [k, v] : request.headers) {
    if (v.empty()) {
      req.erase(k);  // an empty value removes a default header
    } else {
      req.set(k, v);
    }
  }
  if (!request.body.empty() && req.find(bhttp::field::content_type) == req.end()) {
    req.set(bhttp::field::content_type, request.content_type);
  }
  req.keep_alive(false);
  req.body() = request.body;
  req.prepare_payload();
  std::ostringstream serialized;
  serialized << req;
  const std::string bytes = std::move(serialized).str();
  const std::vector<asio::const_buffer> out_buffers{asio::buffer(bytes)};
  ec = {};
  co_await stream.write(out_buffers, ec);
  if (x->expired) co_return timed_out("sending");
  if (ec) {
    co_return Status(ClientError::kConnectionFailed,
                     fmt::format("{}: cannot send the request: {}", what, net::describe_error(ec)));
  }

  // Read: bytes from the stream into the parser until it has a whole response (or the peer
  // closes, which ends a body without Content-Length).
  bhttp::response_parser<bhttp::string_body> parser;
  parser.eager(true);
  parser.header_limit(
      static_cast<uint32_t>(std::min<size_t>(options_.max_response_bytes, 1 << 20)));
  parser.body_limit(options_.max_response_bytes);
  if (verb == bhttp::verb::head) parser.skip(true);
  beast::flat_buffer buffer;
  ec = {};
  while (!ec && !parser.is_done()) {
    boost::system::error_code read_ec;
    const size_t n = co_await stream.read_some(buffer.prepare(16 * 1024), read_ec);
    buffer.commit(n);
    while (buffer.size() > 0 && !parser.is_done()) {
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;
      }
      if (ec) break;
      // Boost 1.74's parser checks body_limit against chunked and close-delimited bodies
      // but not against a Content-Length, so that one is checked here.
      if (parser.is_header_done() && parser.content_length() &&
          *parser.content_length() > options_.max_response_bytes) {
        ec = bhttp::error::body_limit;
        break;
      }
      if (used == 0) break;
    }
    if (ec || parser.is_done()) break;
    if (read_ec == asio::error::eof || read_ec == asio::ssl::error::stream_truncated) {
      // Closed before a single byte: no answer at all (Boost's put_eof would call an empty
      // stream a complete "200 OK" without body).
      if (!parser.got_some()) {
        ec = bhttp::error::end_of_stream;
        break;
      }
      parser.put_eof(ec);
      if (!ec && !parser.is_done()) ec = bhttp::error::partial_message;
    } else if (read_ec) {
      ec = read_ec;
    }
  }
  stream.close();
  if (x->expired)
    co_return Status(ClientError::kTimeout, fmt::format("{}: no response in time", what));
  if (ec) {
    const ClientError e = read_error(ec);
    switch (e) {
      case ClientError::kResponseTooLarge:
        co_return Status(
            e, fmt::format("{}: response larger than {} bytes", what, options_.max_response_bytes));
      case ClientError::kMalformedResponse:
        co_return Status(e, fmt::format("{}: malformed response: {}", what, ec.message()));
      default:
        co_return Status(e, fmt::format("{}: connection closed before a complete response: {}",
                                        what, net::describe_error(ec)));
    }
  }

  auto& res = parser.get();
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    const auto raw_name = field.name_string();
    std::string name = lower(std::string_view(raw_name.data(), raw_name.size()));
    out.fields.emplace_back(std::string(raw_name.data(), raw_name.size()),
                            std::string(field.value()));
    auto [it, inserted] = out.headers.emplace(name, std::string(field.value()));
    if (!inserted) it->second += ", " + std::string(field.value());
  }
  out.body = std::move(res.body());
  out.url = url.to_string();
  co_return out;
}

Task<Result<HttpResponse>> HttpClient::send(HttpRequest request) const {
  const auto timeout = request.timeout.value_or(options_.timeout);
  const Clock::time_point deadline = Clock::now() + timeout;
  auto parsed = parse_url(request.url);
  if (!parsed.ok()) co_return parsed.status();
  Url current = std::move(parsed).value();
  for (int hops = 0;; ++hops) {
    Result<HttpResponse> response = co_await exchange(current, request, deadline);
    if (!response.ok() || !is_redirect(response->status)) co_return response;
    const std::string location = response->header("location");
    if (location.empty()) co_return response;  // a redirect to nowhere: the caller decides
    if (hops >= options_.max_redirects) {
      co_return Status(ClientError::kTooManyRedirects,
                       fmt::format("{} {}: more than {} redirects", request.method, request.url,
                                   options_.max_redirects));
    }
    auto next = resolve_location(current, location);
    if (!next.ok()) co_return next.status();
    const int status = response->status;
    if (status == 301 || status == 302 || status == 303) {
      if (request.method != "HEAD") request.method = "GET";
      request.body.clear();
    }
    if (current.scheme == "https" && next->scheme != "https") {
      // A downgrade: a credential meant for TLS is not sent in clear text.
      std::erase_if(request.headers,
                    [](const auto& h) { return lower(h.first) == "authorization"; });
      request.headers["Authorization"] = "";  // removes a default Authorization header too
    }
    current = std::move(next).value();
  }
}

Result<HttpResponse> HttpClient::send_blocking(HttpRequest request) const {
  return run_sync<Result<HttpResponse>>([this, &request] { return send(std::move(request)); });
}

}  // namespace magnetar::http
