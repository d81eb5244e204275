#include "broker/service/authorization.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "broker/config/store_paths.h"
#include "metadata/metadata_cache.h"

namespace magnetar::broker {

namespace {

constexpr const char* kPulsarProvider =
    "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider";

// Cached forms of the two nodes a decision reads, parsed once per version. Shared so that a
// cache hit copies a pointer, not maps. Only read through the caches (never written), so
// only from_json is defined.
struct TenantAdmins {
  std::shared_ptr<const std::vector<std::string>> roles;
};
struct NamespaceAuth {
  std::shared_ptr<const auth::AuthPolicies> policies;
};

void from_json(const nlohmann::json& j, TenantAdmins& out) {
  out.roles = std::make_shared<const std::vector<std::string>>(auth::tenant_admin_roles(j));
}
void from_json(const nlohmann::json& j, NamespaceAuth& out) {
  out.policies = std::make_shared<const auth::AuthPolicies>(auth::AuthPolicies::from_policies(j));
}

}  // namespace

struct Authorization::Caches {
  Caches(metadata::MetadataStore* store, Executor executor)
      : tenants(store, executor), namespaces(store, executor) {}
  metadata::MetadataCache<TenantAdmins> tenants;
  metadata::MetadataCache<NamespaceAuth> namespaces;
};

struct Authorization::Facts {
  std::shared_ptr<const std::vector<std::string>> admins;  // null: no tenant
  std::shared_ptr<const auth::AuthPolicies> policies;      // null: no namespace (or not asked)
};

Result<std::unique_ptr<Authorization>> Authorization::create(const BrokerConfig& config,
                                                             metadata::MetadataStore* configuration,
                                                             Executor executor) {
  if (!config.authorization_enabled) return std::unique_ptr<Authorization>();
  if (config.authorization_provider != kPulsarProvider) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("authorizationProvider {} is not supported (only {})",
                              config.authorization_provider, kPulsarProvider));
  }
  return std::unique_ptr<Authorization>(new Authorization(config, configuration, executor));
}

Authorization::Authorization(const BrokerConfig& config, metadata::MetadataStore* configuration,
                             Executor executor)
    : authorizer_(auth::AuthorizationSettings{config.super_user_roles,
                                              config.authorization_allow_wildcards_matching}),
      proxy_roles_(config.proxy_roles),
      executor_(executor),
      caches_(std::make_unique<Caches>(configuration, executor)) {}

Authorization::~Authorization() = default;

bool Authorization::is_super_user(std::string_view role) const {
  return authorizer_.is_super_user(role);
}

bool Authorization::is_proxy_role(std::string_view role) const {
  return !role.empty() &&
         std::find(proxy_roles_.begin(), proxy_roles_.end(), role) != proxy_roles_.end();
}

Task<Result<Authorization::Facts>> Authorization::facts(std::string tenant, std::string ns) {
  auto read = [this, tenant = std::move(tenant), ns = std::move(ns)]() -> Task<Result<Facts>> {
    Facts out;
    auto t = co_await caches_->tenants.get(tenant_path(tenant));
    if (!t.ok()) co_return t.status();
    if (!t->has_value()) co_return out;
    out.admins = (*t)->roles;
    if (ns.empty()) co_return out;
    auto n = co_await caches_->namespaces.get(namespace_policies_path(ns));
    if (!n.ok()) co_return n.status();
    if (n->has_value()) out.policies = (*n)->policies;
    co_return out;
  };
  auto got = co_await run_on<Result<Facts>>(executor_, std::move(read));
  co_return std::move(*got);
}

Task<Result<Verdict>> Authorization::tenant_admin(std::string role, std::string tenant) {
  if (is_super_user(role)) co_return Verdict::kAllowed;
  auto f = co_await facts(std::move(tenant), "");
  if (!f.ok()) co_return f.status();
  if (!f->admins) co_return Verdict::kNoTenant;
  co_return authorizer_.is_tenant_admin(role, *f->admins) ? Verdict::kAllowed : Verdict::kDenied;
}

Task<Result<Authorization::Grants>> Authorization::grants(std::string role, std::string tenant,
                                                          std::string ns) {
  Grants out;
  if (is_super_user(role)) {
    out.decided = Verdict::kAllowed;
    co_return out;
  }
  auto f = co_await facts(std::move(tenant), std::move(ns));
  if (!f.ok()) co_return f.status();
  if (!f->admins) {
    out.decided = Verdict::kNoTenant;
  } else if (authorizer_.is_tenant_admin(role, *f->admins)) {
    out.decided = Verdict::kAllowed;
  } else if (!f->policies) {
    out.decided = Verdict::kNoNamespace;
  } else {
    out.policies = std::move(f->policies);
  }
  co_return out;
}

Task<Result<Verdict>> Authorization::namespace_action(std::string role, std::string ns,
                                                      auth::ActionSet actions) {
  std::string tenant = ns.substr(0, ns.find('/'));
  auto g = co_await grants(role, std::move(tenant), std::move(ns));
  if (!g.ok()) co_return g.status();
  if (g->decided) co_return *g->decided;
  co_return authorizer_.namespace_allows(*g->policies, role, actions) ? Verdict::kAllowed
                                                                      : Verdict::kDenied;
}

Task<Result<Verdict>> Authorization::topic_action(std::string role, protocol::TopicName topic,
                                                  auth::ActionSet actions) {
  auto g = co_await grants(role, topic.tenant(), topic.namespace_name());
  if (!g.ok()) co_return g.status();
  if (g->decided) co_return *g->decided;
  co_return authorizer_.topic_allows(*g->policies, role, topic.to_string(), actions)
      ? Verdict::kAllowed
      : Verdict::kDenied;
}

Task<Result<Verdict>> Authorization::subscribe(std::string role, protocol::TopicName topic,
                                               std::string subscription) {
  auto g = co_await grants(role, topic.tenant(), topic.namespace_name());
  if (!g.ok()) co_return g.status();
  if (g->decided) co_return *g->decided;
  switch (authorizer_.subscription_allows(*g->policies, role, subscription)) {
    case auth::SubscriptionVerdict::kPrefixRequired:
      co_return Verdict::kPrefixRequired;
    case auth::SubscriptionVerdict::kRoleNotAllowed:
      co_return Verdict::kDenied;
    case auth::SubscriptionVerdict::kAllowed:
      break;
  }
  const auth::ActionSet consume = {auth::AuthAction::kConsume};
  co_return authorizer_.topic_allows(*g->policies, role, topic.to_string(), consume)
      ? Verdict::kAllowed
      : Verdict::kDenied;
}

}  // namespace magnetar::broker
