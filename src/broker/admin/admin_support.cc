#include "broker/admin/admin_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace magnetar::broker::admin {

using http::Request;
using http::Response;

std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Response ok_json(const Json& j) {
  return Response::json(200, dump(j));
}

Response no_content() {
  Response r;
  r.status = 204;
  return r;
}

Response error(int status, std::string_view reason) {
  return Response::error(status, reason);
}

Response not_found() {
  return error(404, "Not Found");
}

Response method_not_allowed() {
  return error(405, "Method Not Allowed");
}

Response broker_error(const Status& st) {
  if (st.is(Errc::kNotFound)) return error(404, st.message());
  if (st.is(Errc::kAlreadyExists)) return error(409, st.message());
  if (st.is(Errc::kInvalidArgument)) return error(412, st.message());
  if (st.is(Errc::kUnavailable) || st.is(Errc::kTimeout)) {
    return error(503, st.message());
  }
  if (st.is(Errc::kNotSupported)) return error(501, st.message());
  return error(500, st.message());
}

Response store_error(const Status& st) {
  if (st.is(Errc::kResourceExhausted)) {
    return error(412, "The resulting metadata is too large");
  }
  if (st.is(Errc::kUnavailable) || st.is(Errc::kTimeout) || st.is(Errc::kFenced)) {
    return error(503, "Metadata store unavailable: " + st.message());
  }
  return error(500, "Metadata store error: " + st.message());
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool query_flag(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  return it != req.query.end() && it->second == "true";
}

Response redirect_to(const LookupAnswer& owner, const Request& req) {
  std::string target = owner.target.http_url + req.path;
  std::string query;
  for (const auto& [k, v] : req.query) {
    if (k == "authoritative") continue;
    query +=
        fmt::format("{}{}={}", query.empty() ? "" : "&", http::url_encode(k), http::url_encode(v));
  }
  query += fmt::format("{}authoritative={}", query.empty() ? "" : "&",
                       owner.authoritative ? "true" : "false");
  Response r;
  r.status = 307;
  r.headers["Location"] = target + "?" + query;
  return r;
}

Task<Result<http::HttpResponse>> forward(const BrokerUrls& owner, const std::string& method,
                                         const std::string& target, const std::string& body,
                                         const http::Request& origin) {
  static const http::HttpClient client([] {
    http::ClientOptions o;
    o.max_redirects = 5;
    o.user_agent = "magnetar-broker";
    return o;
  }());
  http::HttpRequest request;
  request.method = method;
  request.url = owner.http_url + target;
  request.body = body;
  for (const char* name : {"authorization", "x-pulsar-auth-method-name"}) {
    if (auto it = origin.headers.find(name); it != origin.headers.end()) {
      request.headers[name] = it->second;
    }
  }
  auto response = co_await client.send(std::move(request));
  co_return response;
}

Response forwarded_failure(const BrokerUrls& owner, const Result<http::HttpResponse>& r) {
  if (!r.ok()) {
    return error(503,
                 fmt::format("broker {} did not answer: {}", owner.http_url, r.status().message()));
  }
  Response out;
  out.status = r->status;
  out.content_type = r->header("content-type");
  out.body = r->body;
  return out;
}

bool has_empty_segment(const std::vector<std::string>& segments) {
  return std::any_of(segments.begin(), segments.end(),
                     [](const std::string& s) { return s.empty(); });
}

Prefix templates_prefix(std::string path, std::vector<std::string> methods) {
  Prefix prefix;
  prefix.path = std::move(path);
  prefix.methods = std::move(methods);
  prefix.malformed = not_found();
  prefix.check = [](const Request&,
                    const std::vector<std::string>& parts) -> std::optional<Response> {
    if (parts.empty() || has_empty_segment(parts)) return not_found();
    return std::nullopt;
  };
  return prefix;
}

namespace {

// The prefix's answer to a path it refuses before the router, or nullopt.
std::optional<Response> refused(const Prefix& prefix, const Request& req) {
  auto segments = http::path_segments(req.path, prefix.path);
  if (!segments) return prefix.malformed;
  if (prefix.check) return prefix.check(req, *segments);
  return std::nullopt;
}

// `req` outlives the returned task (the server awaits it).
Task<Response> dispatch_under(std::shared_ptr<const http::Router> router,
                              std::shared_ptr<const Prefix> prefix, const Request& req) {
  if (auto answer = refused(*prefix, req)) co_return std::move(*answer);
  if (req.path.size() == prefix->path.size() + 1 && req.path.back() == '/') {
    // "<prefix>/" names what "<prefix>" does (path_segments drops the trailing '/'); the
    // router would see an empty segment.
    Request same = req;
    same.path = prefix->path;
    co_return co_await router->dispatch(same);
  }
  co_return co_await router->dispatch(req);
}

}  // namespace

void serve(http::HttpServer& web, std::shared_ptr<const http::Router> router, Prefix prefix) {
  auto shared = std::make_shared<const Prefix>(std::move(prefix));
  for (const std::string& method : shared->methods) {
    web.route_prefix(method, shared->path, [router, shared](const Request& req) {
      return dispatch_under(router, shared, req);
    });
  }
}

void serve_exact(http::HttpServer& web, std::shared_ptr<const http::Router> router,
                 std::string method, std::string path) {
  web.route(std::move(method), std::move(path),
            [router](const Request& req) { return router->dispatch(req); });
}

}  // namespace magnetar::broker::admin
