#include "http/http_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <charconv>
#include <memory>
#include <vector>

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
        return make_error_condition(Errc::kInvalidArgument);
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
  if (ec == beast::error::timeout) return ClientError::kTimeout;
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

// State a resolve shares with the timer that may cancel it: the timer's handler can run after
// the awaiting coroutine has moved on, so it must not touch the coroutine's frame.
struct ResolveGuard {
  explicit ResolveGuard(const Executor& executor) : resolver(executor) {}
  tcp::resolver resolver;
  bool timed_out = false;
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

HttpClient::HttpClient(ClientOptions options) : options_(std::move(options)) {}

Task<Result<HttpResponse>> HttpClient::exchange(const Url& url, const HttpRequest& request,
                                                Clock::time_point deadline) const {
  const std::string what = fmt::format("{} {}", request.method, url.to_string());
  if (url.scheme != "http") {
    co_return Status(ClientError::kUnsupportedScheme,
                     fmt::format("{}: only http:// URLs are supported", what));
  }
  Executor executor = co_await asio::this_coro::executor;
  boost::system::error_code ec;

  // Resolve: IP literals directly, names through the resolver under the deadline.
  std::vector<tcp::endpoint> endpoints;
  const asio::ip::address literal = asio::ip::make_address(url.host, ec);
  if (!ec) {
    endpoints.emplace_back(literal, url.port);
  } else {
    auto guard = std::make_shared<ResolveGuard>(executor);
    asio::steady_timer timer(executor);
    timer.expires_at(deadline);
    timer.async_wait([guard](const boost::system::error_code& e) {
      if (e) return;
      guard->timed_out = true;
      guard->resolver.cancel();
    });
    ec = {};
    const std::string service = std::to_string(url.port);
    auto results = co_await guard->resolver.async_resolve(
        url.host, service, asio::redirect_error(asio::use_awaitable, ec));
    timer.cancel();
    if (guard->timed_out) {
      co_return Status(ClientError::kTimeout, fmt::format("{}: timed out resolving", what));
    }
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

  beast::tcp_stream stream(executor);
  stream.expires_at(deadline);
  ec = {};
  co_await stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    if (ec == beast::error::timeout) {
      co_return Status(ClientError::kTimeout, fmt::format("{}: timed out connecting", what));
    }
    if (ec == asio::error::connection_refused) {
      co_return Status(ClientError::kConnectionRefused,
                       fmt::format("{}: connection refused", what));
    }
    co_return Status(ClientError::kConnectionFailed,
                     fmt::format("{}: cannot connect: {}", what, ec.message()));
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
  for (const auto& [k, v] : request.headers) req.set(k, v);
  if (!request.body.empty() && req.find(bhttp::field::content_type) == req.end()) {
    req.set(bhttp::field::content_type, request.content_type);
  }
  req.keep_alive(false);
  req.body() = request.body;
  req.prepare_payload();
  ec = {};
  co_await bhttp::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    if (ec == beast::error::timeout) {
      co_return Status(ClientError::kTimeout, fmt::format("{}: timed out sending", what));
    }
    co_return Status(ClientError::kConnectionFailed,
                     fmt::format("{}: cannot send the request: {}", what, ec.message()));
  }

  bhttp::response_parser<bhttp::string_body> parser;
  parser.header_limit(
      static_cast<uint32_t>(std::min<size_t>(options_.max_response_bytes, 1 << 20)));
  parser.body_limit(options_.max_response_bytes);
  if (verb == bhttp::verb::head) parser.skip(true);
  beast::flat_buffer buffer(options_.max_response_bytes + (1 << 20));
  ec = {};
  co_await bhttp::async_read_header(stream, buffer, parser,
                                    asio::redirect_error(asio::use_awaitable, ec));
  // Boost 1.74's parser checks body_limit against chunked and close-delimited bodies but not
  // against a Content-Length, so that one is checked here.
  if (!ec && parser.content_length() && *parser.content_length() > options_.max_response_bytes) {
    ec = bhttp::error::body_limit;
  }
  if (!ec && !parser.is_done()) {
    co_await bhttp::async_read(stream, buffer, parser,
                               asio::redirect_error(asio::use_awaitable, ec));
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (ec) {
    const ClientError e = read_error(ec);
    switch (e) {
      case ClientError::kTimeout:
        co_return Status(e, fmt::format("{}: no response in time", what));
      case ClientError::kResponseTooLarge:
        co_return Status(
            e, fmt::format("{}: response larger than {} bytes", what, options_.max_response_bytes));
      case ClientError::kMalformedResponse:
        co_return Status(e, fmt::format("{}: malformed response: {}", what, ec.message()));
      default:
        co_return Status(e, fmt::format("{}: connection closed before a complete response: {}",
                                        what, ec.message()));
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
    current = std::move(next).value();
  }
}

Result<HttpResponse> HttpClient::send_blocking(HttpRequest request) const {
  return run_sync<Result<HttpResponse>>([this, &request] { return send(std::move(request)); });
}

}  // namespace magnetar::http
