#include "console/console.h"

#include <string>

#include "console/assets.h"

namespace magnetar::console {

const char* const kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Headers every console answer carries, found or not.
void add_common_headers(http::Response& r) {
  r.headers["Content-Security-Policy"] = kContentSecurityPolicy;
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.headers["X-Frame-Options"] = "DENY";
  r.headers["Referrer-Policy"] = "no-referrer";
}

const Asset* find_asset(std::string_view name) {
  if (name.empty()) name = "index.html";
  for (const Asset& a : embedded_assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// Whether an If-None-Match value ("*", or a list of entity tags, weak or strong) names `etag`.
bool matches(std::string_view if_none_match, std::string_view etag) {
  while (!if_none_match.empty()) {
    const size_t comma = if_none_match.find(',');
    std::string_view one = if_none_match.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (one.starts_with("W/")) one.remove_prefix(2);
    if (one == "*" || one == etag) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::string_view content_type_of(std::string_view name) {
  if (ends_with(name, ".html")) return "text/html; charset=utf-8";
  if (ends_with(name, ".js")) return "text/javascript; charset=utf-8";
  if (ends_with(name, ".css")) return "text/css; charset=utf-8";
  if (ends_with(name, ".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

http::Response serve(const http::Request& request) {
  http::Response r;
  add_common_headers(r);
  const std::string_view path = request.path;
  if (path == kPrefix.substr(0, kPrefix.size() - 1)) {
    // Relative URLs in the page resolve against /console/.
    r.status = 302;
    r.headers["Location"] = std::string(kPrefix);
    r.headers["Cache-Control"] = "no-cache";
    r.body = "See /console/";
    return r;
  }
  const Asset* asset =
      path.starts_with(kPrefix) ? find_asset(path.substr(kPrefix.size())) : nullptr;
  if (asset == nullptr) {
    r.status = 404;
    r.body = "Not Found";
    return r;
  }
  // Assets change only with the binary: cached, but revalidated by ETag on every load.
  r.headers["Cache-Control"] = "no-cache";
  r.headers["ETag"] = std::string(asset->etag);
  auto inm = request.headers.find("if-none-match");
  if (inm != request.headers.end() && matches(inm->second, asset->etag)) {
    r.status = 304;
    return r;
  }
  r.content_type = std::string(content_type_of(asset->name));
  r.body = std::string(asset->data);
  return r;
}

void add_console_routes(http::HttpServer& server) {
  auto handler = [](const http::Request& request) -> Task<http::Response> {
    co_return serve(request);
  };
  server.route("GET", std::string(kPrefix.substr(0, kPrefix.size() - 1)), handler);
  server.route_prefix("GET", std::string(kPrefix), handler);
}

}  // namespace magnetar::console
