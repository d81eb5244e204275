#pragma once
// Routes by method and path template for the admin REST API and lookup, each route naming the
// permission it needs, with one guard hook that runs before every handler.
//
//   /admin/v2/persistent/{tenant}/{namespace}/{topic}/subscription/{subscription}/skip/{count}
//
// A template is '/'-separated literal segments and `{name}` parameters (a whole segment each).
// A request path is split at '/' first and each segment percent-decoded after (url_decode), so
// "%2F" stays inside one parameter; a malformed escape answers 400. One trailing '/' is ignored
// on both sides (as path_segments does). A parameter matches any non-empty segment. When several
// templates match, the one with a literal at the first position where they differ wins:
// `/clusters/{cluster}/peers` over `/clusters/{cluster}/{x}`, `/{t}/{ns}/partitioned` over
// `/{t}/{ns}/{topic}`. Precedence is decided among the request method's routes only.
//
// Dispatch: 404 {"reason": "Not Found"} when no template matches the path, 405
// {"reason": "Method Not Allowed"} when it matches only for other methods; otherwise the guard
// (if set) runs with the request, the matched route and its parameters, and either answers
// itself (401/403 go there) or lets the handler run. Without a guard every request proceeds.
//
// Threads: add() and set_guard() are for setup, on one thread, before the router is mounted
// (asserted). From then on the router is immutable, and match() and dispatch() may run on any
// thread at once; handlers and the guard run on the caller's (the HttpServer's) event loop and
// must not block. Programming errors at setup (a malformed or duplicate template, a permission
// naming a parameter the template lacks) abort through MAGNETAR_ASSERT.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/asio.h"
#include "http/http_server.h"

namespace magnetar::http {

// The decoded parameters of a matched template, by name. Names point into the router: a
// PathParams is valid while the router that made it lives.
class PathParams {
 public:
  // The parameter's value; throws std::out_of_range when the template has no such parameter
  // (a handler bug: the server answers 500 and logs it).
  const std::string& at(std::string_view name) const;
  // The value, or nullptr.
  const std::string* find(std::string_view name) const;
  size_t size() const { return values_.size(); }
  // In template order.
  auto begin() const { return values_.begin(); }
  auto end() const { return values_.end(); }

  // `name` must outlive this object (the router passes its template's names).
  void add(std::string_view name, std::string value) {
    values_.emplace_back(name, std::move(value));
  }

 private:
  std::vector<std::pair<std::string_view, std::string>> values_;
};

// What a caller must be allowed to do to use a route. Only the description an authorization
// layer decides from, together with the path parameters and the principal (super user? admin of
// the tenant? which grants in the namespace and topic policies?); nothing here checks anything.
// The scopes follow Pulsar's REST API (PulsarWebResource / PulsarAuthorizationProvider).
enum class Scope : uint8_t {
  kPublic,         // no authentication at all: health, status, /metrics
  kAuthenticated,  // any authenticated principal
  kSuperUser,      // super users only: tenant create/delete, clusters writes, broker config
  kTenantAdmin,    // super users and admins of the tenant: tenant, namespace and policy admin
  kNamespace,      // tenant admins, or a namespace-level grant of `action` (GET_TOPICS, ...)
  kTopic,          // tenant admins, or a namespace or topic grant of `action`
  kSubscription,   // kTopic with kConsume, and the subscription's allowed roles
};

// The grant (Pulsar's AuthAction) that lets a principal who is not an admin of the tenant
// through a kNamespace, kTopic or kSubscription route.
enum class Action : uint8_t {
  kNone,    // none does: tenant admins only (terminate, compact, unload, bundle operations)
  kLookup,  // produce or consume: lookup, stats, metadata
  kProduce,
  kConsume,
  kFunctions,
  kSources,
  kSinks,
  kPackages,
};

std::string_view to_string(Scope scope);
std::string_view to_string(Action action);

// The names a permission is about, resolved from a request's path parameters; empty when the
// permission does not name it. A copy: it outlives the permission and the parameters.
struct Resource {
  std::string tenant;
  std::string ns;
  std::string domain;  // "persistent" or "non-persistent"
  std::string topic;   // the local name: "x" of persistent://t/ns/x
  std::string subscription;

  std::string namespace_name() const;  // "t/ns"
  std::string topic_name() const;      // "persistent://t/ns/x"
};

struct Permission {
  Scope scope = Scope::kPublic;
  Action action = Action::kNone;
  // Pulsar's TopicOperation / NamespaceOperation name ("GET_STATS", "SKIP"), for denial
  // messages and audit logs; may be empty.
  std::string operation;
  // Each names a resource: a literal, or "{param}" for the matched path parameter; empty when
  // the scope needs no such name. Every "{param}" must be a parameter of the route's template.
  std::string tenant;
  std::string ns;
  std::string domain;
  std::string topic;
  std::string subscription;

  static Permission none();
  static Permission authenticated();
  static Permission super_user();
  // Tenant from {tenant}.
  static Permission tenant_admin();
  // {tenant}/{namespace}.
  static Permission namespace_op(Action action, std::string operation);
  // `domain` is "persistent", "non-persistent" or "{domain}"; tenant, namespace and topic from
  // {tenant}/{namespace}/{topic}.
  static Permission topic_op(std::string domain, Action action, std::string operation);
  // As topic_op with kConsume, the subscription from {subscription}.
  static Permission subscription_op(std::string domain, std::string operation);

  // The names, given the parameters of a request that matched the route.
  Resource resource(const PathParams& params) const;
};

using RouteHandler = std::function<Task<Response>(const Request&, const PathParams&)>;

struct Route {
  std::string method;  // "GET", "PUT", ...
  std::string path;    // the template, as registered
  Permission permission;
  RouteHandler handler;
};

// Runs before every handler: a response to answer instead (e.g. 401/403), or nullopt to let the
// handler run. Its arguments live until the returned task completes.
using Guard =
    std::function<Task<std::optional<Response>>(const Request&, const Route&, const PathParams&)>;

class Router {
 public:
  Router() = default;
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Registers a route. Asserts that the template is well formed, that no route of the same
  // method has the same shape (the same literals and parameters at the same positions,
  // whatever the parameters are called), and that the permission's "{param}"s and the names
  // its scope needs are there.
  void add(std::string method, std::string path, Permission permission, RouteHandler handler);
  void set_guard(Guard guard);

  struct Match {
    const Route* route = nullptr;  // owned by the router
    PathParams params;
  };
  // The route for a method and a raw path (no query), or the 400/404/405 to answer.
  std::variant<Match, Response> match(std::string_view method, std::string_view path) const;

  // Matches, runs the guard, then the handler. `request` must outlive the returned task.
  Task<Response> dispatch(const Request& request) const;

  // The methods that have routes, each once.
  std::vector<std::string> methods() const;

 private:
  friend void mount(HttpServer& server, std::shared_ptr<const Router> router, std::string prefix);

  struct Segment {
    bool param = false;
    std::string text;  // the literal, or the parameter's name
  };
  struct Entry {
    Route route;
    std::vector<Segment> segments;
  };

  // Whether the template matches the decoded segments of a path.
  static bool matches(const Entry& entry, const std::vector<std::string>& segments);
  // Whether `a` wins over `b` (the same number of segments, both matching one path): `a` has
  // a literal at the first position where one has a literal and the other a parameter.
  static bool preferred(const Entry& a, const Entry& b);

  std::vector<std::unique_ptr<Entry>> entries_;  // stable addresses: Match and PathParams point in
  Guard guard_;
  mutable std::atomic<bool> mounted_{false};
};

// Serves `router` for every path under `prefix` (e.g. "/admin/v2/"): registers prefix handlers
// on `server` for each method the router has routes for and for GET, HEAD, POST, PUT, DELETE,
// PATCH and OPTIONS, so that the router, not the server, answers 404 and 405 under the prefix.
// The server's exact routes, and its longer prefixes for the same method, still win
// (HttpServer's rules). The handlers
// share ownership of the router; it is immutable from now on. May be called several times
// (e.g. "/admin/v2/" and "/lookup/") with one router.
void mount(HttpServer& server, std::shared_ptr<const Router> router, std::string prefix);

}  // namespace magnetar::http
