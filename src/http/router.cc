#include "http/router.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "common/status.h"

namespace magnetar::http {

namespace {

// "{name}" -> "name"; anything else -> nullopt.
std::optional<std::string_view> param_reference(std::string_view s) {
  if (s.size() < 3 || s.front() != '{' || s.back() != '}') return std::nullopt;
  return s.substr(1, s.size() - 2);
}

}  // namespace

const std::string& PathParams::at(std::string_view name) const {
  if (const std::string* v = find(name)) return *v;
  throw std::out_of_range(fmt::format("no path parameter '{}'", name));
}

const std::string* PathParams::find(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return &v;
  }
  return nullptr;
}

std::string_view to_string(Scope scope) {
  switch (scope) {
    case Scope::kPublic:
      return "public";
    case Scope::kAuthenticated:
      return "authenticated";
    case Scope::kSuperUser:
      return "super-user";
    case Scope::kTenantAdmin:
      return "tenant-admin";
    case Scope::kNamespace:
      return "namespace";
    case Scope::kTopic:
      return "topic";
    case Scope::kSubscription:
      return "subscription";
  }
  return "unknown";
}

std::string_view to_string(Action action) {
  switch (action) {
    case Action::kNone:
      return "none";
    case Action::kLookup:
      return "lookup";
    case Action::kProduce:
      return "produce";
    case Action::kConsume:
      return "consume";
    case Action::kFunctions:
      return "functions";
    case Action::kSources:
      return "sources";
    case Action::kSinks:
      return "sinks";
    case Action::kPackages:
      return "packages";
  }
  return "unknown";
}

std::string Resource::namespace_name() const {
  return fmt::format("{}/{}", tenant, ns);
}

std::string Resource::topic_name() const {
  return fmt::format("{}://{}/{}/{}", domain, tenant, ns, topic);
}

Permission Permission::none() {
  return Permission{};
}

Permission Permission::authenticated() {
  Permission p;
  p.scope = Scope::kAuthenticated;
  return p;
}

Permission Permission::super_user() {
  Permission p;
  p.scope = Scope::kSuperUser;
  return p;
}

Permission Permission::tenant_admin() {
  Permission p;
  p.scope = Scope::kTenantAdmin;
  p.tenant = "{tenant}";
  return p;
}

Permission Permission::namespace_op(Action action, std::string operation) {
  Permission p;
  p.scope = Scope::kNamespace;
  p.action = action;
  p.operation = std::move(operation);
  p.tenant = "{tenant}";
  p.ns = "{namespace}";
  return p;
}

Permission Permission::topic_op(std::string domain, Action action, std::string operation) {
  Permission p = namespace_op(action, std::move(operation));
  p.scope = Scope::kTopic;
  p.domain = std::move(domain);
  p.topic = "{topic}";
  return p;
}

Permission Permission::subscription_op(std::string domain, std::string operation) {
  Permission p = topic_op(std::move(domain), Action::kConsume, std::move(operation));
  p.scope = Scope::kSubscription;
  p.subscription = "{subscription}";
  return p;
}

Resource Permission::resource(const PathParams& params) const {
  auto resolve = [&params](const std::string& field) -> std::string {
    auto name = param_reference(field);
    if (!name) return field;
    const std::string* value = params.find(*name);
    return value ? *value : std::string();
  };
  return Resource{resolve(tenant), resolve(ns), resolve(domain), resolve(topic),
                  resolve(subscription)};
}

void Router::add(std::string method, std::string path, Permission permission,
                 RouteHandler handler) {
  MAGNETAR_ASSERT(!mounted_.load(), fmt::format("route {} {} added after mount", method, path));
  MAGNETAR_ASSERT(!method.empty() && handler,
                  fmt::format("route {} {}: no method or handler", method, path));
  MAGNETAR_ASSERT(!path.empty() && path.front() == '/',
                  fmt::format("template '{}' does not start with '/'", path));

  auto entry = std::make_unique<Entry>();
  std::string_view rest = std::string_view(path).substr(1);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view text = rest.substr(0, slash);
    MAGNETAR_ASSERT(!text.empty(), fmt::format("template '{}' has an empty segment", path));
    Segment segment;
    if (auto name = param_reference(text)) {
      MAGNETAR_ASSERT(name->find_first_of("{}/") == std::string_view::npos,
                      fmt::format("template '{}': bad parameter '{}'", path, text));
      for (const Segment& s : entry->segments) {
        MAGNETAR_ASSERT(!s.param || s.text != *name,
                        fmt::format("template '{}' repeats parameter '{}'", path, *name));
      }
      segment.param = true;
      segment.text = std::string(*name);
    } else {
      MAGNETAR_ASSERT(text.find_first_of("{}%") == std::string_view::npos,
                      fmt::format("template '{}': bad segment '{}'", path, text));
      segment.text = std::string(text);
    }
    entry->segments.push_back(std::move(segment));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }

  for (const auto& other : entries_) {
    if (other->route.method != method || other->segments.size() != entry->segments.size()) {
      continue;
    }
    bool same = true;
    for (size_t i = 0; same && i < entry->segments.size(); ++i) {
      const Segment& a = entry->segments[i];
      const Segment& b = other->segments[i];
      same = a.param == b.param && (a.param || a.text == b.text);
    }
    MAGNETAR_ASSERT(!same, fmt::format("route {} {} duplicates {} {}", method, path,
                                       other->route.method, other->route.path));
  }

  // The permission names only parameters of this template, and what its scope needs.
  const std::pair<const char*, const std::string*> fields[] = {
      {"tenant", &permission.tenant},
      {"ns", &permission.ns},
      {"domain", &permission.domain},
      {"topic", &permission.topic},
      {"subscription", &permission.subscription}};
  for (const auto& [field, value] : fields) {
    auto name = param_reference(*value);
    if (!name) continue;
    const bool found = std::any_of(entry->segments.begin(), entry->segments.end(),
                                   [&](const Segment& s) { return s.param && s.text == *name; });
    MAGNETAR_ASSERT(found, fmt::format("route {} {}: permission {} names {}, not a parameter",
                                       method, path, field, *value));
  }
  const Scope scope = permission.scope;
  const bool needs_subscription = scope == Scope::kSubscription;
  const bool needs_topic = needs_subscription || scope == Scope::kTopic;
  const bool needs_namespace = needs_topic || scope == Scope::kNamespace;
  const bool needs_tenant = needs_namespace || scope == Scope::kTenantAdmin;
  MAGNETAR_ASSERT((!needs_tenant || !permission.tenant.empty()) &&
                      (!needs_namespace || !permission.ns.empty()) &&
                      (!needs_topic || (!permission.topic.empty() && !permission.domain.empty())) &&
                      (!needs_subscription || !permission.subscription.empty()),
                  fmt::format("route {} {}: a {} permission without the names it needs", method,
                              path, to_string(scope)));
  MAGNETAR_ASSERT(!needs_topic || param_reference(permission.domain) ||
                      permission.domain == "persistent" || permission.domain == "non-persistent",
                  fmt::format("route {} {}: topic domain '{}'", method, path, permission.domain));
  MAGNETAR_ASSERT(needs_namespace || permission.action == Action::kNone,
                  fmt::format("route {} {}: action {} with scope {}", method, path,
                              to_string(permission.action), to_string(scope)));
  MAGNETAR_ASSERT(
      !needs_subscription || permission.action == Action::kConsume,
      fmt::format("route {} {}: a subscription permission is for consume", method, path));

  entry->route =
      Route{std::move(method), std::move(path), std::move(permission), std::move(handler)};
  entries_.push_back(std::move(entry));
}

void Router::set_guard(Guard guard) {
  MAGNETAR_ASSERT(!mounted_.load(), "guard set after mount");
  guard_ = std::move(guard);
}

bool Router::matches(const Entry& entry, const std::vector<std::string>& segments) {
  if (entry.segments.size() != segments.size()) return false;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = entry.segments[i];
    if (s.param ? segments[i].empty() : s.text != segments[i]) return false;
  }
  return true;
}

bool Router::preferred(const Entry& a, const Entry& b) {
  for (size_t i = 0; i < a.segments.size(); ++i) {
    if (a.segments[i].param != b.segments[i].param) return !a.segments[i].param;
  }
  return false;
}

std::variant<Router::Match, Response> Router::match(std::string_view method,
                                                    std::string_view path) const {
  if (path.empty() || path.front() != '/') return Response::error(404, "Not Found");
  auto segments = path_segments(path, "/");
  if (!segments) return Response::error(400, "malformed percent-encoding in the path");
  const Entry* best = nullptr;
  bool other_method = false;
  for (const auto& entry : entries_) {
    if (!matches(*entry, *segments)) continue;
    if (entry->route.method != method) {
      other_method = true;
    } else if (best == nullptr || preferred(*entry, *best)) {
      best = entry.get();
    }
  }
  if (best == nullptr) {
    return other_method ? Response::error(405, "Method Not Allowed")
                        : Response::error(404, "Not Found");
  }
  Match m;
  m.route = &best->route;
  for (size_t i = 0; i < best->segments.size(); ++i) {
    if (best->segments[i].param) m.params.add(best->segments[i].text, std::move((*segments)[i]));
  }
  return m;
}

Task<Response> Router::dispatch(const Request& request) const {
  auto found = match(request.method, request.path);
  if (Response* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const Match& m = std::get<Match>(found);
  if (guard_) {
    std::optional<Response> answer = co_await guard_(request, *m.route, m.params);
    if (answer) co_return std::move(*answer);
  }
  co_return co_await m.route->handler(request, m.params);
}

std::vector<std::string> Router::methods() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) {
    if (std::find(out.begin(), out.end(), entry->route.method) == out.end()) {
      out.push_back(entry->route.method);
    }
  }
  return out;
}

void mount(HttpServer& server, std::shared_ptr<const Router> router, std::string prefix) {
  MAGNETAR_ASSERT(router != nullptr, "mount without a router");
  router->mounted_.store(true);
  std::vector<std::string> methods = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
  for (std::string& m : router->methods()) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) {
      methods.push_back(std::move(m));
    }
  }
  for (const std::string& m : methods) {
    server.route_prefix(m, prefix,
                        [router](const Request& request) { return router->dispatch(request); });
  }
}

}  // namespace magnetar::http
