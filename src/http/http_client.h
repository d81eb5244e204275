#pragma once
// A small HTTP/1.1 client on Boost.Beast, for admin tools and broker-to-broker REST calls.
//
// One request per connection (sent with `Connection: close`); no pooling. Each request has a
// total deadline covering resolve, connect, write, read and every redirect hop. 301, 302,
// 303, 307 and 308 are followed up to `max_redirects` times: 307 and 308 repeat the method
// and body, 301/302/303 turn into a GET without a body (HEAD stays HEAD), as browsers and
// most HTTP libraries do. Headers, including Authorization, go to the redirect target too:
// Pulsar brokers redirect to other brokers of the same cluster.
//
// Only `http://` URLs for now; `https://` is refused with kNotSupported (a TLS stream would
// slot into `HttpClient::exchange`, the one place that owns the connection).
//
// A response is any status the server answered with (4xx and 5xx included); the Result
// fails only when no complete response arrived: see ClientError.
//
// HttpClient is an immutable value after construction: safe to share between threads and
// coroutines. `send` runs on the awaiting coroutine's executor and the client must outlive
// the returned task; `send_blocking` runs a private io_context on the calling thread and must
// not be called from an event loop.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "common/asio.h"
#include "common/status.h"

namespace magnetar::http {

enum class ClientError {
  kOk = 0,
  kBadUrl = 1,         // the URL does not parse, or a redirect Location does not
  kUnsupportedScheme,  // https:// and anything but http://
  kResolveFailed,      // the host name does not resolve
  kConnectionRefused,  // nobody listens there
  kConnectionFailed,   // other connect, write or read failures (reset, unreachable)
  kTimeout,            // the total deadline passed
  kMalformedResponse,  // the bytes received are not an HTTP/1.x response
  kResponseTooLarge,   // the response exceeds max_response_bytes
  kTooManyRedirects,   // more than max_redirects hops
};

const std::error_category& client_category() noexcept;
std::error_code make_error_code(ClientError e) noexcept;

}  // namespace magnetar::http

template <>
struct std::is_error_code_enum<magnetar::http::ClientError> : std::true_type {};

namespace magnetar::http {

// A parsed absolute URL. `target` is the path and query, "/" when the URL has none.
struct Url {
  std::string scheme;  // lower case: "http", "https"
  std::string host;    // without brackets for an IPv6 literal
  uint16_t port = 0;
  std::string target;

  // "scheme://host:port" (brackets around IPv6 literals).
  std::string origin() const;
  std::string to_string() const { return origin() + target; }
};

// Parses "http://host[:port][/path][?query]"; the port defaults to 80 (http) or 443 (https).
// Fragments are dropped. Userinfo ("user@host") is refused.
Result<Url> parse_url(std::string_view text);

// Resolves a Location header against the URL it came from: absolute URLs, "//host/path",
// "/path" and relative paths ("b" against "/a/x" gives "/a/b").
Result<Url> resolve_location(const Url& base, std::string_view location);

struct HttpRequest {
  std::string method = "GET";
  std::string url;  // absolute: http://host:port/path?query
  std::string body;
  // Sent as Content-Type when the body is not empty (and no Content-Type header is given).
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;  // added to the client's default headers
  // Overrides ClientOptions::timeout for this request.
  std::optional<std::chrono::milliseconds> timeout;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names; repeated ones joined by ", "
  std::vector<std::pair<std::string, std::string>> fields;  // as received: names' case, order
  std::string body;
  std::string url;  // the URL that answered (after redirects)

  // The header's value, or "" (name in lower case).
  std::string header(const std::string& name) const;
};

struct ClientOptions {
  std::chrono::milliseconds timeout{30'000};  // total, per request, redirects included
  int max_redirects = 5;
  size_t max_response_bytes = 64 * 1024 * 1024;        // headers and body
  std::map<std::string, std::string> default_headers;  // e.g. Authorization: Bearer <token>
  std::string user_agent = "magnetar-http-client";
};

class HttpClient {
 public:
  explicit HttpClient(ClientOptions options = {});

  // Sends the request and follows redirects, on the caller's executor.
  Task<Result<HttpResponse>> send(HttpRequest request) const;

  // The same from a plain thread, on a private io_context. Blocks until done.
  Result<HttpResponse> send_blocking(HttpRequest request) const;

  const ClientOptions& options() const { return options_; }

 private:
  // One request/response exchange with the origin of `url`, without following redirects.
  Task<Result<HttpResponse>> exchange(const Url& url, const HttpRequest& request,
                                      std::chrono::steady_clock::time_point deadline) const;

  ClientOptions options_;
};

}  // namespace magnetar::http
