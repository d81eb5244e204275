#include "proxy/http_forward.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <filesystem>

#include "auth/authentication.h"
#include "common/logging.h"
#include "http/http_server.h"
#include "proxy/broker_discovery.h"
#include "proxy/proxy_config.h"

namespace magnetar::proxy {

namespace {

using http::Request;
using http::Response;

const std::string* header(const Request& request, const char* name) {
  auto it = request.headers.find(name);
  return it == request.headers.end() ? nullptr : &it->second;
}

// Headers that belong to one hop, or that the HTTP client writes itself.
bool hop_by_hop(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "connection", "keep-alive",     "proxy-authenticate", "proxy-authorization",
      "te",         "trailer",        "transfer-encoding",  "upgrade",
      "host",       "content-length", "x-original-principal", "expect"};
  for (auto n : kNames) {
    if (n == name) return true;
  }
  return false;
}

// Written as the servlet container writes it: not Pulsar's {"reason": ...} shape.
Response authentication_required() {
  Response r;
  r.status = 401;
  r.body = "Authentication required";
  return r;
}

// The client's role, or the 401 to answer. "" with authentication off.
std::variant<std::string, Response> authenticate(const HttpForwardContext& c,
                                                 const Request& request) {
  if (c.authentication == nullptr) return std::string();
  auto outcome = c.authentication->authenticate_http(
      header(request, "authorization"), header(request, "x-pulsar-auth-method-name"),
      request.tls_common_name, auth::now_seconds());
  if (!outcome.reason.empty()) {
    log::Logger("proxy.http")
        .with("path", request.path.substr(0, 256))
        .info("authentication failed: {}", outcome.reason);
  }
  if (!outcome.role) return authentication_required();
  return *outcome.role;
}

Task<Response> forward(HttpForwardContext& c, const Request& request) {
  auto who = authenticate(c, request);
  if (auto* refused = std::get_if<Response>(&who)) co_return std::move(*refused);
  const std::string& role = std::get<std::string>(who);
  if (request.body.size() > static_cast<size_t>(c.config.http_input_max_replay_buffer_size)) {
    co_return Response::error(413, fmt::format("Request body over {} bytes",
                                               c.config.http_input_max_replay_buffer_size));
  }
  auto base = c.discovery.next_web_url();
  if (!base.ok()) co_return Response::error(503, base.status().message());
  http::HttpRequest out;
  out.method = request.method;
  std::string origin = *base;
  while (!origin.empty() && origin.back() == '/') origin.pop_back();
  out.url = origin + request.target;
  out.body = request.body;
  for (const auto& [name, value] : request.headers) {
    if (hop_by_hop(name)) continue;
    if (name == "content-type") {
      out.content_type = value;
      continue;
    }
    out.headers[name] = value;
  }
  if (!role.empty()) out.headers["X-Original-Principal"] = role;
  auto answer = co_await c.client.send(std::move(out));
  if (!answer.ok()) {
    const bool timeout = answer.status().is(Errc::kTimeout);
    log::Logger("proxy.http")
        .with("path", request.path.substr(0, 256))
        .warn("forwarding to {}: {}", *base, answer.status().message());
    co_return Response::error(timeout ? 504 : 502,
                              fmt::format("Broker {} did not answer: {}", *base,
                                          answer.status().message()));
  }
  Response r;
  r.status = answer->status;
  r.body = std::move(answer->body);
  r.content_type = answer->header("content-type");
  for (const auto& [name, value] : answer->fields) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (hop_by_hop(lower) || lower == "content-type" || lower == "date" || lower == "server") {
      continue;
    }
    r.headers[name] = value;
  }
  co_return r;
}

}  // namespace

void add_proxy_routes(http::HttpServer& server, HttpForwardContext& context) {
  HttpForwardContext* c = &context;
  for (const char* method : {"GET", "PUT", "POST", "DELETE", "HEAD"}) {
    for (const char* prefix : {"/admin/", "/lookup/"}) {
      server.route_prefix(method, prefix,
                          [c](const Request& request) { return forward(*c, request); });
    }
  }
  server.route("GET", "/status.html", [c](const Request&) -> Task<Response> {
    if (!c->config.status_file_path.empty() &&
        !std::filesystem::exists(c->config.status_file_path)) {
      co_return Response::error(404, "status file missing: out of rotation");
    }
    Response r;
    r.body = "OK";
    co_return r;
  });
  server.route("GET", "/proxy-stats/connections", [c](const Request& request) -> Task<Response> {
    auto who = authenticate(*c, request);
    if (auto* refused = std::get_if<Response>(&who)) co_return std::move(*refused);
    co_return Response::json(200, c->connections_json ? c->connections_json() : "[]");
  });
  http::MetricsGate gate;
  if (context.config.authenticate_metrics_endpoint && context.authentication != nullptr) {
    gate = [c](const Request& request) -> std::optional<Response> {
      auto who = authenticate(*c, request);
      if (auto* refused = std::get_if<Response>(&who)) return std::move(*refused);
      return std::nullopt;
    };
  }
  http::add_metrics_route(server, std::move(gate));
}

}  // namespace magnetar::proxy
