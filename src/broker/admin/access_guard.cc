#include "broker/admin/access_guard.h"

#include <fmt/format.h>

#include <utility>
#include <variant>
#include <vector>

#include "broker/admin/policies_json.h"
#include "broker/service/authentication.h"
#include "broker/service/authorization.h"
#include "common/logging.h"
#include "protocol/topic_name.h"

namespace magnetar::broker::admin {

namespace {

using http::Action;
using http::Request;
using http::Response;
using http::Scope;

const std::string* header(const Request& request, const char* name) {
  auto it = request.headers.find(name);
  return it == request.headers.end() ? nullptr : &it->second;
}

// Written as the servlet container writes it: not Pulsar's {"reason": ...} shape.
Response authentication_required() {
  Response r;
  r.status = 401;
  r.body = "Authentication required";
  return r;
}

Response denied(int status, std::string reason) {
  return Response::error(status, reason);
}

auth::ActionSet actions_of(Action action) {
  switch (action) {
    case Action::kLookup:
      return {auth::AuthAction::kProduce, auth::AuthAction::kConsume};
    case Action::kProduce:
      return {auth::AuthAction::kProduce};
    case Action::kConsume:
      return {auth::AuthAction::kConsume};
    case Action::kFunctions:
      return {auth::AuthAction::kFunctions};
    case Action::kSources:
      return {auth::AuthAction::kSources};
    case Action::kSinks:
      return {auth::AuthAction::kSinks};
    case Action::kPackages:
      return {auth::AuthAction::kPackages};
    case Action::kNone:
      break;
  }
  return {};
}

// The answer to a verdict that is not kAllowed (nullopt for kAllowed).
std::optional<Response> answer(const Result<Verdict>& verdict, const std::string& refusal) {
  if (!verdict.ok()) {
    return Response::error(
        503, fmt::format("Failed to check permissions: {}", verdict.status().message()));
  }
  switch (*verdict) {
    case Verdict::kAllowed:
      return std::nullopt;
    case Verdict::kNoTenant:
      return denied(404, "Tenant does not exist");
    case Verdict::kNoNamespace:
      return denied(404, "Namespace does not exist");
    case Verdict::kDenied:
    case Verdict::kPrefixRequired:
      break;
  }
  return denied(401, refusal);
}

constexpr const char* kTenantRefusal =
    "Don't have permission to administrate resources on this tenant";

// Pulsar's checks for a route's permission, for a caller who is not a super user.
Task<std::optional<Response>> authorize(Authorization& authz, std::string role,
                                        http::Permission permission, http::Resource resource) {
  if (role.empty()) {
    // Authorization without authentication: nobody is anybody.
    const bool topic_path =
        permission.scope == Scope::kTopic || permission.scope == Scope::kSubscription;
    co_return denied(topic_path ? 401 : 403, "Need to authenticate to perform the request");
  }
  switch (permission.scope) {
    case Scope::kPublic:
    case Scope::kAuthenticated:
      co_return std::nullopt;
    case Scope::kSuperUser:
      if (authz.is_super_user(role)) co_return std::nullopt;
      co_return denied(401, "This operation requires super-user access");
    case Scope::kTenantAdmin: {
      auto v = co_await authz.tenant_admin(role, resource.tenant);
      co_return answer(v, kTenantRefusal);
    }
    case Scope::kNamespace: {
      const std::string ns = resource.namespace_name();
      if (permission.action == Action::kNone) {
        auto v = co_await authz.tenant_admin(role, resource.tenant);
        co_return answer(v, kTenantRefusal);
      }
      auth::ActionSet actions = actions_of(permission.action);
      auto v = co_await authz.namespace_action(role, ns, std::move(actions));
      co_return answer(v, fmt::format("Unauthorized to validateNamespaceOperation for operation "
                                      "[{}] on namespace [{}]",
                                      permission.operation, ns));
    }
    case Scope::kTopic:
    case Scope::kSubscription: {
      auto topic = protocol::TopicName::parse(resource.topic_name());
      if (!topic.ok()) co_return denied(412, "Invalid topic name");
      const std::string refusal =
          fmt::format("Unauthorized to validateTopicOperation for operation [{}] on topic [{}]",
                      permission.operation, topic->to_string());
      if (permission.scope == Scope::kSubscription) {
        auto v = co_await authz.subscribe(role, *topic, resource.subscription);
        co_return answer(v, refusal);
      }
      if (permission.action == Action::kNone) {
        auto v = co_await authz.tenant_admin(role, resource.tenant);
        co_return answer(v, refusal);
      }
      auth::ActionSet actions = actions_of(permission.action);
      auto v = co_await authz.topic_action(role, *topic, std::move(actions));
      co_return answer(v, refusal);
    }
  }
  co_return denied(401, kTenantRefusal);
}

// A Pulsar proxy's requests name the client they are for (§4.3 of
// pulsar-security-proxy.md): the role of the client's own token, or the proxy's role when it
// authenticates with its own credentials.
constexpr const char* kOriginalPrincipalHeader = "x-original-principal";

// Pulsar's 401 when the proxy or the client it speaks for is refused.
Response proxy_refused(const http::Permission& permission, const std::string& proxy,
                       const std::string& original) {
  const std::string p = proxy.substr(0, 256);
  const std::string o = original.substr(0, 256);
  if (permission.scope == Scope::kSuperUser) {
    return denied(
        401,
        fmt::format("Proxy not authorized for super-user operation (proxy:{},original:{})", p, o));
  }
  return denied(
      401, fmt::format("Proxy not authorized to access resource (proxy:{},original:{})", p, o));
}

// The route's checks for a request authenticated as `role`.
Task<std::optional<Response>> check_role(Authorization& authz, std::string role,
                                         http::Permission permission, http::Resource resource) {
  if (authz.is_super_user(role)) co_return std::nullopt;
  auto check = authorize(authz, std::move(role), std::move(permission), std::move(resource));
  co_return co_await std::move(check);
}

// The route's checks for a request from a proxy role (`proxy`): it must name the client it
// speaks for, which may not be a proxy role itself, and both roles must pass.
Task<std::optional<Response>> check_proxied(Authorization& authz, std::string proxy,
                                            std::optional<std::string> original,
                                            http::Permission permission, http::Resource resource) {
  auto log = log::Logger("broker.http").with("role", proxy);
  if (!original || blank(*original)) {
    log.info("proxied request without {}", "X-Original-Principal");
    co_return denied(401, "Original principal cannot be empty if the request is via proxy.");
  }
  log = log.with("original_principal", original->substr(0, 256));
  if (authz.is_proxy_role(*original)) {
    log.info("proxied request for a proxy role");
    co_return denied(401, "Original principal cannot be a proxy role");
  }
  const std::vector<std::string> roles = {*original, proxy};
  for (const std::string& role : roles) {
    http::Permission p = permission;
    http::Resource r = resource;
    auto check = check_role(authz, role, std::move(p), std::move(r));
    std::optional<Response> refusal = co_await std::move(check);
    if (!refusal) continue;
    log.with("checked_role", role.substr(0, 256)).info("proxied request refused");
    if (refusal->status == 401) co_return proxy_refused(permission, proxy, *original);
    co_return refusal;
  }
  co_return std::nullopt;
}

}  // namespace

std::variant<Caller, Response> authenticate_request(const Request& request,
                                                    const Authentication* authentication) {
  if (authentication == nullptr) return Caller{};
  auto outcome = authentication->authenticate_http(
      header(request, "authorization"), header(request, "x-pulsar-auth-method-name"),
      request.tls_common_name, auth::now_seconds());
  if (!outcome.reason.empty()) {
    log::Logger("broker.http")
        .with("path", request.path.substr(0, 256))
        .info("authentication failed: {}", outcome.reason);
  }
  if (!outcome.role) return authentication_required();
  return Caller{*outcome.role};
}

http::Guard make_access_guard(const Authentication* authentication, Authorization* authorization) {
  return [authentication, authorization](
             const Request& request, const http::Route& route,
             const http::PathParams& params) -> Task<std::optional<Response>> {
    if (route.permission.scope == Scope::kPublic) co_return std::nullopt;
    auto caller = authenticate_request(request, authentication);
    if (auto* r = std::get_if<Response>(&caller)) co_return std::move(*r);
    if (authorization == nullptr) co_return std::nullopt;
    std::string role = std::get<Caller>(caller).role;
    // Arguments are made outside the co_await expression (GCC 12 and class temporaries).
    http::Permission permission = route.permission;
    http::Resource resource = route.permission.resource(params);
    const std::string* forwarded = header(request, kOriginalPrincipalHeader);
    if (authorization->is_proxy_role(role)) {
      std::optional<std::string> original;
      if (forwarded != nullptr) original = *forwarded;
      auto check = check_proxied(*authorization, std::move(role), std::move(original),
                                 std::move(permission), std::move(resource));
      co_return co_await std::move(check);
    }
    // Other roles are checked as themselves: a proxy that forwards the client's own token
    // names that same role, and anyone else's header counts for nothing.
    if (forwarded != nullptr && !blank(*forwarded) && *forwarded != role) {
      log::Logger("broker.http")
          .with("role", role)
          .with("original_principal", forwarded->substr(0, 256))
          .info("ignoring X-Original-Principal from a role that is not one of proxyRoles");
    }
    auto check =
        check_role(*authorization, std::move(role), std::move(permission), std::move(resource));
    co_return co_await std::move(check);
  };
}

}  // namespace magnetar::broker::admin
