#pragma once
// What a role may do (authorizationEnabled): Pulsar's PulsarAuthorizationProvider over the
// configuration store (../shared/reference/pulsar-security-proxy.md §5). Super users
// (superUserRoles) and the admins of a tenant (its TenantInfo adminRoles) may do everything in
// it; everyone else needs a namespace or topic grant from the namespace's auth_policies, and
// to consume, the subscription's own rules. The decisions are auth::Authorizer's; this class
// fetches what they are made from.
//
// Caching: tenants and namespace policies are read through metadata caches on one loop (the
// `executor` given to create()), so a check costs a hop to that loop and, once warm, no store
// round trip; the store's notifications drop changed nodes, so a grant or a revoke applies to
// the next check without restarts or unloads.
//
// Threading: the checks may be awaited from any thread (they hop to `executor` and back).
// Lifetime: outlives every check in flight (the broker stops its loops first).

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/authorization.h"
#include "broker/config/broker_config.h"
#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

enum class Verdict {
  kAllowed,
  kDenied,
  kPrefixRequired,  // consume: Prefix mode and the subscription does not start with the role
  kNoTenant,        // the tenant does not exist (for roles that are not super users)
  kNoNamespace,     // the namespace does not exist (for roles that are not super users)
};

class Authorization {
 public:
  // nullptr when authorizationEnabled is false. An authorizationProvider other than Pulsar's
  // fails (kInvalidArgument), as a setting the broker cannot honour.
  static Result<std::unique_ptr<Authorization>> create(const BrokerConfig& config,
                                                       metadata::MetadataStore* configuration,
                                                       Executor executor);
  ~Authorization();
  Authorization(const Authorization&) = delete;
  Authorization& operator=(const Authorization&) = delete;

  bool is_super_user(std::string_view role) const;
  // One of proxyRoles: its requests speak for another role (the original principal), and
  // both must pass every check (pulsar-security-proxy.md §1.5, §4.3).
  bool is_proxy_role(std::string_view role) const;

  // Super users and admins of `tenant`.
  Task<Result<Verdict>> tenant_admin(std::string role, std::string tenant);
  // ... or a namespace-level grant of one of `actions` on `ns` ("tenant/namespace").
  Task<Result<Verdict>> namespace_action(std::string role, std::string ns, auth::ActionSet actions);
  // ... or a namespace or topic grant of one of `actions` on `topic` (LOOKUP passes both
  // produce and consume).
  Task<Result<Verdict>> topic_action(std::string role, protocol::TopicName topic,
                                     auth::ActionSet actions);
  // Consume on `topic` through `subscription`: the subscription's rules, then the grant.
  Task<Result<Verdict>> subscribe(std::string role, protocol::TopicName topic,
                                  std::string subscription);

 private:
  struct Caches;
  struct Facts;  // what one decision is made from
  Authorization(const BrokerConfig& config, metadata::MetadataStore* configuration,
                Executor executor);
  // The tenant's admins and (with a namespace) its policies, read on executor_.
  Task<Result<Facts>> facts(std::string tenant, std::string ns);
  // What every check of a namespace or topic decides before its grants: a super user or an
  // admin of the tenant (kAllowed), no tenant, no namespace; else the namespace's grants.
  struct Grants {
    std::optional<Verdict> decided;
    std::shared_ptr<const auth::AuthPolicies> policies;  // when not decided
  };
  Task<Result<Grants>> grants(std::string role, std::string tenant, std::string ns);

  auth::Authorizer authorizer_;
  std::vector<std::string> proxy_roles_;
  Executor executor_;
  std::unique_ptr<Caches> caches_;  // used on executor_ only
};

}  // namespace magnetar::broker
