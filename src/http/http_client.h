#pragma once
// A small HTTP/1.1 client on Boost.Beast, for admin tools and broker-to-broker REST calls.
//
// One request per connection (sent with `Connection: close`); no pooling. Each request has a
// total deadline covering resolve, connect, write, read and every redirect hop. 301, 302,
// 303, 307 and 308 are followed up to `max_redirects` times: 307 and 308 repeat the method
// and body, 301/302/303 turn into a GET without a body (HEAD stays HEAD), as browsers and
// most HTTP libraries do. Headers, including Authorization, go to the redirect target too:
// Pulsar brokers redirect to other brokers of the same cluster. Redirects between http://
// and https:// are followed both ways, except that an https -> http redirect drops the
// Authorization header (a credential meant for TLS is not sent in clear text).
//
// `http://` and `https://` URLs go through the same code (`HttpClient::exchange` over a
// net::Stream, plain TCP or TLS). HTTPS is configured by the tls_* options, named as in the
// client library's ClientOptions; the TLS context (net/tls.h) is made on the first https://
// request and shared by every later one (and every copy of the client). A bad TLS file fails
// https:// requests with kTlsConfiguration; a failed handshake (certificate not trusted,
// wrong host name, a peer that does not speak TLS) with kTlsHandshakeFailed, naming the
// cause: "TLS handshake failed: certificate verify failed: unable to get local issuer
// certificate".
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
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "common/asio.h"
#include "common/status.h"

namespace magnetar::net {
class TlsContext;
}

namespace magnetar::http {

enum class ClientError {
  kOk = 0,
  kBadUrl = 1,          // the URL does not parse, or a redirect Location does not
  kUnsupportedScheme,   // anything but http:// and https://
  kResolveFailed,       // the host name does not resolve
  kConnectionRefused,   // nobody listens there
  kConnectionFailed,    // other connect, write or read failures (reset, unreachable)
  kTimeout,             // the total deadline passed
  kMalformedResponse,   // the bytes received are not an HTTP/1.x response
  kResponseTooLarge,    // the response exceeds max_response_bytes
  kTooManyRedirects,    // more than max_redirects hops
  kTlsConfiguration,    // the tls_* files are missing or not what they should be
  kTlsHandshakeFailed,  // the server's certificate is not trusted, names another host, ...
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
  // Added to the client's default headers; an empty value removes a default header.
  std::map<std::string, std::string> headers;
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

  // HTTPS (PEM files). CAs the server's certificate must chain to; empty: the system's CAs.
  std::string tls_trust_certs_file_path;
  // Accept any server certificate (no verification at all; tests only).
  bool tls_allow_insecure_connection = false;
  // The server's certificate must also name the URL's host (SAN DNS name or IP).
  bool tls_validate_hostname = false;
  // A client certificate and its key, for servers that require one (mutual TLS).
  std::string tls_certificate_file_path;
  std::string tls_private_key_file_path;
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

  struct TlsState;
  // The client TLS context, made on first use (shared by copies of the client).
  Result<std::shared_ptr<net::TlsContext>> tls_context() const;

  ClientOptions options_;
  std::shared_ptr<TlsState> tls_;
};

}  // namespace magnetar::http
