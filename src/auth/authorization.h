#pragma once
// Pulsar's authorization model (PulsarAuthorizationProvider; reference
// pulsar-security-proxy.md §5): the decisions, given the data they are made from. Nothing here
// reads a store: the broker fetches a tenant's adminRoles and a namespace's auth_policies and
// asks.
//
//   Authorizer authz({.super_users = {"admin"}, .wildcards = false});
//   AuthPolicies p = AuthPolicies::from_policies(namespace_policies_json);
//   authz.topic_allows(p, "app1", "persistent://t/ns/x", {AuthAction::kProduce});
//
// Super users and the tenant's admins may do everything in the tenant; the callers check
// those first (is_super_user, is_tenant_admin). Everyone else needs a grant: on the namespace
// (namespace_auth) or on the topic (destination_auth, a partition also by its parent's name);
// with wildcards, a granted role ending with '*' matches by prefix and one starting with '*'
// by suffix. Consuming also passes the subscription's rules: its allowed roles
// (subscription_auth_roles) when it has any, and with subscription_auth_mode "Prefix" a name
// starting with the role.
//
// Threading: immutable; any thread.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace magnetar::auth {

// Pulsar's AuthAction, as stored and as pulsar-admin spells it.
enum class AuthAction { kProduce, kConsume, kFunctions, kSources, kSinks, kPackages };

std::string_view to_string(AuthAction action);
std::optional<AuthAction> parse_auth_action(std::string_view name);
// "[produce, consume, functions, sources, sinks, packages]": for error texts.
std::string auth_action_names();

using ActionSet = std::set<AuthAction>;

// The auth_policies of a namespace's Policies JSON, and its subscription_auth_mode.
struct AuthPolicies {
  std::map<std::string, ActionSet> namespace_auth;                           // role -> actions
  std::map<std::string, std::map<std::string, ActionSet>> destination_auth;  // topic -> role -> …
  std::map<std::string, std::set<std::string>> subscription_auth_roles;  // subscription -> roles
  bool subscription_prefix_mode = false;  // subscription_auth_mode == "Prefix"

  // Tolerant: members absent or of the wrong type, and actions it does not know, are skipped
  // (what the REST API stored was checked when it was written).
  static AuthPolicies from_policies(const nlohmann::json& policies);
};

// A tenant's adminRoles from its TenantInfo JSON (none when absent or malformed).
std::vector<std::string> tenant_admin_roles(const nlohmann::json& tenant_info);

struct AuthorizationSettings {
  std::vector<std::string> super_users;  // superUserRoles
  bool wildcards = false;                // authorizationAllowWildcardsMatching
};

enum class SubscriptionVerdict {
  kAllowed,
  kRoleNotAllowed,  // the subscription's allowed roles exclude the role
  kPrefixRequired,  // Prefix mode and the name does not start with the role
};

class Authorizer {
 public:
  explicit Authorizer(AuthorizationSettings settings);

  bool is_super_user(std::string_view role) const;
  bool is_tenant_admin(std::string_view role, const std::vector<std::string>& admin_roles) const;

  // A namespace-level grant of any of `actions`.
  bool namespace_allows(const AuthPolicies& policies, std::string_view role,
                        const ActionSet& actions) const;
  // A namespace-level or topic-level grant of any of `actions` on `topic` (a full name;
  // "…-partition-N" also counts its parent's grants).
  bool topic_allows(const AuthPolicies& policies, std::string_view role, std::string_view topic,
                    const ActionSet& actions) const;
  // The subscription's own rules (not the consume grant: ask topic_allows too).
  SubscriptionVerdict subscription_allows(const AuthPolicies& policies, std::string_view role,
                                          std::string_view subscription) const;

 private:
  bool grants(const std::map<std::string, ActionSet>& by_role, std::string_view role,
              const ActionSet& actions) const;

  AuthorizationSettings settings_;
};

}  // namespace magnetar::auth
