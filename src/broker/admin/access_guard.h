#pragma once
// Who is asking, and may they: the admin API's and HTTP lookup's guard, run by the router
// before every handler (../shared/reference/pulsar-security-proxy.md §4).
//
// Authentication (authenticationEnabled): an "Authorization: Bearer <token>" header
// (case-sensitive prefix), else over HTTPS a verified client certificate (its CN, with
// AuthenticationProviderTls); the provider chosen by X-Pulsar-Auth-Method-Name when sent. When
// it fails and anonymousUserRole is set, the request runs as the anonymous role (as Pulsar's
// HTTP filter does, even for a bad token); otherwise 401 with no JSON body, which pulsar-admin
// prints as "HTTP 401 Unauthorized".
//
// Authorization (authorizationEnabled): the route's http::Permission against super users,
// the tenant's admins and the grants, with Pulsar's answers: mostly 401 {"reason": ...},
// 404 for a tenant or namespace that does not exist.
//
// Routes with Scope::kPublic run without either.

#include <optional>
#include <string>

#include "http/http_server.h"
#include "http/router.h"

namespace magnetar::auth {
class Authentication;
}  // namespace magnetar::auth

namespace magnetar::broker {
using auth::Authentication;
class Authorization;
}  // namespace magnetar::broker

namespace magnetar::broker::admin {

// Who sent `request`: the role, or the 401 to answer. With `authentication` null every
// request is let in with no role.
struct Caller {
  std::string role;
};
std::variant<Caller, http::Response> authenticate_request(const http::Request& request,
                                                          const Authentication* authentication);

// The router's guard; both may be null (that part is off). They outlive the router.
http::Guard make_access_guard(const Authentication* authentication, Authorization* authorization);

}  // namespace magnetar::broker::admin
