#pragma once
// What the admin REST resources share: JSON answers, the maps from a failed call's Status to
// an HTTP code, the 307 to a topic's or bundle's owner, one request forwarded to another
// broker, and the URL prefixes the router is served under (with the answers a prefix gives,
// before any route, to paths no route template can match).
//
// Threads: everything here runs on the web server's event loop; nothing blocks.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "broker/namespace/namespace_service.h"
#include "common/asio.h"
#include "common/status.h"
#include "http/http_client.h"
#include "http/http_server.h"
#include "http/router.h"

namespace magnetar::broker::admin {

using Json = nlohmann::json;

// A value, or the response that says why there is none.
template <typename T>
using OrResponse = std::variant<T, http::Response>;

// Never throws: strings that are not UTF-8 (names decoded from URLs) are dumped with U+FFFD.
std::string dump(const Json& j);
http::Response ok_json(const Json& j);
http::Response no_content();
// Pulsar's error shape, {"reason": reason} (http::Response::error).
http::Response error(int status, std::string_view reason);
http::Response not_found();           // 404 {"reason": "Not Found"}
http::Response method_not_allowed();  // 405 {"reason": "Method Not Allowed"}

// A failed broker call (topics, lookups, bundles, brokers): 404 kNotFound, 409
// kAlreadyExists, 412 kInvalidArgument, 503 kUnavailable or kTimeout, 501 kNotSupported, 500
// anything else; the reason is the status message.
http::Response broker_error(const Status& st);
// A failed configuration-store call (clusters, tenants, namespace policies): 412 when the
// node would be too large, 503 when the store is unavailable, 500 otherwise.
http::Response store_error(const Status& st);

// A whole decimal int64 ("12", "-3"; not "", "+1", "1x").
std::optional<int64_t> parse_int(std::string_view s);
// Whether query parameter `key` is "true".
bool query_flag(const http::Request& req, const std::string& key);

// 307 to the same path and query on `owner`'s web service, with authoritative= set from the
// answer (replacing the request's own).
http::Response redirect_to(const LookupAnswer& owner, const http::Request& req);

// One request to another broker's web service (`target`: path and query), following up to 5
// redirects. Every argument must outlive the call (pass the caller's named locals).
// The caller's credentials (Authorization, X-Pulsar-Auth-Method-Name of `origin`) go along:
// the other broker authenticates and authorizes the caller itself.
Task<Result<http::HttpResponse>> forward(const BrokerUrls& owner, const std::string& method,
                                         const std::string& target, const std::string& body,
                                         const http::Request& origin);
// A forwarded call that failed or was not a success, as this broker's answer: 503 when the
// broker did not answer, its own status and body otherwise.
http::Response forwarded_failure(const BrokerUrls& owner, const Result<http::HttpResponse>& r);

// What a prefix answers before the router, from the decoded segments after the prefix alone:
// a response, or nullopt to let the router (its guard, then a route) answer. Only for paths
// the router would answer differently from the resource's contract (an empty segment, which
// no template parameter matches; a name that is not valid): it sees no store and has no side
// effects, so it may answer before the guard.
using PathCheck = std::function<std::optional<http::Response>(
    const http::Request& req, const std::vector<std::string>& segments)>;

struct Prefix {
  std::string path;                  // e.g. "/admin/v2/persistent/"
  std::vector<std::string> methods;  // served here; the server answers 405 to the others
  http::Response malformed;          // the answer to a malformed percent-escape in the path
  PathCheck check;                   // may be empty
};

// Serves `router` for `prefix.methods` under `prefix.path` (HttpServer prefix routes):
// `prefix.malformed` or `prefix.check`'s answer, else the router's. The router must not change
// from now on; the handlers share its ownership.
void serve(http::HttpServer& web, std::shared_ptr<const http::Router> router, Prefix prefix);
// Serves `router` for one exact method and path (the server answers 405 to other methods).
void serve_exact(http::HttpServer& web, std::shared_ptr<const http::Router> router,
                 std::string method, std::string path);

// Whether any segment is empty ("a//b"): no route template matches it.
bool has_empty_segment(const std::vector<std::string>& segments);
// A prefix served by router templates only: a malformed escape, nothing below the prefix
// (`path` itself, with its trailing '/') and an empty segment are 404.
Prefix templates_prefix(std::string path, std::vector<std::string> methods);

}  // namespace magnetar::broker::admin
