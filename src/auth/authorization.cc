#include "auth/authorization.h"

#include <array>
#include <utility>

namespace magnetar::auth {

namespace {

constexpr std::array<std::pair<AuthAction, std::string_view>, 6> kActions = {{
    {AuthAction::kProduce, "produce"},
    {AuthAction::kConsume, "consume"},
    {AuthAction::kFunctions, "functions"},
    {AuthAction::kSources, "sources"},
    {AuthAction::kSinks, "sinks"},
    {AuthAction::kPackages, "packages"},
}};

const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

ActionSet actions_of(const nlohmann::json& list) {
  ActionSet out;
  if (!list.is_array()) return out;
  for (const auto& a : list) {
    if (!a.is_string()) continue;
    if (auto action = parse_auth_action(a.get<std::string>())) out.insert(*action);
  }
  return out;
}

std::map<std::string, ActionSet> grants_of(const nlohmann::json& by_role) {
  std::map<std::string, ActionSet> out;
  if (!by_role.is_object()) return out;
  for (const auto& [role, actions] : by_role.items()) out[role] = actions_of(actions);
  return out;
}

bool intersects(const ActionSet& granted, const ActionSet& wanted) {
  for (AuthAction a : wanted) {
    if (granted.count(a) != 0) return true;
  }
  return false;
}

// Pulsar's partition suffix: "-partition-" and digits.
std::string_view parent_of_partition(std::string_view topic) {
  constexpr std::string_view kSuffix = "-partition-";
  const size_t at = topic.rfind(kSuffix);
  if (at == std::string_view::npos || at + kSuffix.size() == topic.size()) return {};
  for (size_t i = at + kSuffix.size(); i < topic.size(); ++i) {
    if (topic[i] < '0' || topic[i] > '9') return {};
  }
  return topic.substr(0, at);
}

}  // namespace

std::string_view to_string(AuthAction action) {
  for (const auto& [a, name] : kActions) {
    if (a == action) return name;
  }
  return "unknown";
}

std::optional<AuthAction> parse_auth_action(std::string_view name) {
  for (const auto& [a, n] : kActions) {
    if (n == name) return a;
  }
  return std::nullopt;
}

std::string auth_action_names() {
  std::string out = "[";
  for (const auto& [a, name] : kActions) {
    if (out.size() > 1) out += ", ";
    out += name;
  }
  return out + "]";
}

AuthPolicies AuthPolicies::from_policies(const nlohmann::json& policies) {
  AuthPolicies out;
  const nlohmann::json& auth = member(policies, "auth_policies");
  out.namespace_auth = grants_of(member(auth, "namespace_auth"));
  if (const auto& topics = member(auth, "destination_auth"); topics.is_object()) {
    for (const auto& [topic, by_role] : topics.items()) {
      out.destination_auth[topic] = grants_of(by_role);
    }
  }
  if (const auto& subs = member(auth, "subscription_auth_roles"); subs.is_object()) {
    for (const auto& [sub, roles] : subs.items()) {
      auto& set = out.subscription_auth_roles[sub];
      if (!roles.is_array()) continue;
      for (const auto& r : roles) {
        if (r.is_string()) set.insert(r.get<std::string>());
      }
    }
  }
  const auto& mode = member(policies, "subscription_auth_mode");
  out.subscription_prefix_mode = mode.is_string() && mode.get<std::string>() == "Prefix";
  return out;
}

std::vector<std::string> tenant_admin_roles(const nlohmann::json& tenant_info) {
  std::vector<std::string> out;
  const auto& roles = member(tenant_info, "adminRoles");
  if (!roles.is_array()) return out;
  for (const auto& r : roles) {
    if (r.is_string()) out.push_back(r.get<std::string>());
  }
  return out;
}

Authorizer::Authorizer(AuthorizationSettings settings) : settings_(std::move(settings)) {}

bool Authorizer::is_super_user(std::string_view role) const {
  if (role.empty()) return false;
  for (const auto& s : settings_.super_users) {
    if (s == role) return true;
  }
  return false;
}

bool Authorizer::is_tenant_admin(std::string_view role,
                                 const std::vector<std::string>& admin_roles) const {
  if (role.empty()) return false;
  for (const auto& a : admin_roles) {
    if (a == role) return true;
  }
  return false;
}

bool Authorizer::grants(const std::map<std::string, ActionSet>& by_role, std::string_view role,
                        const ActionSet& actions) const {
  if (auto it = by_role.find(std::string(role)); it != by_role.end()) {
    if (intersects(it->second, actions)) return true;
  }
  if (!settings_.wildcards) return false;
  for (const auto& [granted, set] : by_role) {
    if (granted.size() < 2 || !intersects(set, actions)) continue;
    const std::string_view g = granted;
    // "*" in the middle is literal: only a leading or trailing one is a wildcard.
    if (g.back() == '*' && role.substr(0, g.size() - 1) == g.substr(0, g.size() - 1)) return true;
    if (g.front() == '*' && role.size() >= g.size() - 1 &&
        role.substr(role.size() - (g.size() - 1)) == g.substr(1)) {
      return true;
    }
  }
  return false;
}

bool Authorizer::namespace_allows(const AuthPolicies& policies, std::string_view role,
                                  const ActionSet& actions) const {
  if (role.empty()) return false;
  return grants(policies.namespace_auth, role, actions);
}

bool Authorizer::topic_allows(const AuthPolicies& policies, std::string_view role,
                              std::string_view topic, const ActionSet& actions) const {
  if (role.empty()) return false;
  if (grants(policies.namespace_auth, role, actions)) return true;
  for (std::string_view name : {topic, parent_of_partition(topic)}) {
    if (name.empty()) continue;
    auto it = policies.destination_auth.find(std::string(name));
    if (it != policies.destination_auth.end() && grants(it->second, role, actions)) return true;
  }
  return false;
}

SubscriptionVerdict Authorizer::subscription_allows(const AuthPolicies& policies,
                                                    std::string_view role,
                                                    std::string_view subscription) const {
  if (subscription.empty()) return SubscriptionVerdict::kAllowed;
  if (policies.subscription_prefix_mode && subscription.substr(0, role.size()) != role) {
    return SubscriptionVerdict::kPrefixRequired;
  }
  auto it = policies.subscription_auth_roles.find(std::string(subscription));
  if (it != policies.subscription_auth_roles.end() && !it->second.empty() &&
      it->second.count(std::string(role)) == 0) {
    return SubscriptionVerdict::kRoleNotAllowed;
  }
  return SubscriptionVerdict::kAllowed;
}

}  // namespace magnetar::auth
