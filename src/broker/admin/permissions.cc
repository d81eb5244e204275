// Who may do what: the grants of a namespace's auth_policies (Pulsar's REST paths, reference
// pulsar-security-proxy.md §5.6), all stored in the namespace's Policies node in the
// configuration store, which the brokers' authorization reads through its caches:
//
//   /admin/v2/namespaces/{t}/{ns}/permissions                      GET   role -> actions
//   /admin/v2/namespaces/{t}/{ns}/permissions/{role}               POST  actions (replaces)
//                                                                  DELETE
//   /admin/v2/namespaces/{t}/{ns}/permissions/subscription         GET   subscription -> roles
//   /admin/v2/namespaces/{t}/{ns}/permissions/subscription/{sub}   POST  roles (replaces)
//   /admin/v2/namespaces/{t}/{ns}/permissions/{sub}/{role}         DELETE
//   /admin/v2/persistent/{t}/{ns}/{topic}/permissions              GET   namespace ∪ topic grants
//   /admin/v2/persistent/{t}/{ns}/{topic}/permissions/{role}       POST  actions (destination_auth)
//                                                                  DELETE
//
// Every route needs an admin of the tenant. Grants are kept whether or not the broker
// authorizes (authorizationEnabled), as Pulsar 3.x/4.x keeps them: they apply once it does.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "auth/authorization.h"
#include "broker/admin/admin_nodes.h"
#include "broker/admin/admin_routes.h"
#include "broker/admin/policies_json.h"
#include "broker/admin/topic_access.h"
#include "broker/config/store_paths.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

// The object at p.auth_policies.<key>, made when absent or malformed.
Json& grants_of(Json& policies, const char* key) {
  Json& auth = policies["auth_policies"];
  if (!auth.is_object()) auth = default_policies()["auth_policies"];
  Json& grants = auth[key];
  if (!grants.is_object()) grants = Json::object();
  return grants;
}

// The stored object at auth_policies.<key> (an empty object when absent).
Json stored_grants(const Json& policies, const char* key) {
  const Json& grants = member(member(policies, "auth_policies"), key);
  return grants.is_object() ? grants : Json::object();
}

class Permissions {
 public:
  explicit Permissions(std::shared_ptr<const AdminContext> ctx) : ctx_(std::move(ctx)) {}

  // GET of one auth_policies member of the namespace.
  Task<Response> read(NamespaceName ns, const char* key) {
    if (!ns.valid()) co_return invalid_namespace_name();
    auto loaded = co_await load(configuration(), ns.policies_path());
    if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
    const auto& node = std::get<0>(loaded);
    if (!node) co_return error(404, kNoNamespace);
    co_return ok_json(stored_grants(node->value, key));
  }

  Task<Response> grant(NamespaceName ns, std::string role, const Request& req) {
    if (!ns.valid()) co_return invalid_namespace_name();
    if (!valid_role(role)) co_return error(412, "Invalid role name");
    auto actions = parse_actions(req);
    if (auto* r = std::get_if<Response>(&actions)) co_return std::move(*r);
    const Json granted = std::get<0>(std::move(actions));
    const Mutation change = [&role, &granted](Json& p) -> std::optional<Response> {
      grants_of(p, "namespace_auth")[role] = granted;
      return std::nullopt;
    };
    co_return co_await update_node(configuration(), ns.policies_path(), change, kNoNamespace);
  }

  Task<Response> revoke(NamespaceName ns, std::string role) {
    if (!ns.valid()) co_return invalid_namespace_name();
    if (!valid_role(role)) co_return error(412, "Invalid role name");
    const Mutation change = [&role](Json& p) -> std::optional<Response> {
      grants_of(p, "namespace_auth").erase(role);
      return std::nullopt;
    };
    co_return co_await update_node(configuration(), ns.policies_path(), change, kNoNamespace);
  }

  Task<Response> grant_subscription(NamespaceName ns, std::string subscription,
                                    const Request& req) {
    if (!ns.valid()) co_return invalid_namespace_name();
    auto body = parse_body(req);
    if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
    auto roles = parse_string_list(std::get<0>(body), "roles");
    if (auto* r = std::get_if<Response>(&roles)) co_return std::move(*r);
    std::vector<std::string> list = std::get<0>(std::move(roles));
    for (const std::string& role : list) {
      if (!valid_role(role)) co_return error(412, "Invalid role name");
    }
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    const Json granted(list);
    const Mutation change = [&subscription, &granted](Json& p) -> std::optional<Response> {
      grants_of(p, "subscription_auth_roles")[subscription] = granted;
      return std::nullopt;
    };
    co_return co_await update_node(configuration(), ns.policies_path(), change, kNoNamespace);
  }

  Task<Response> revoke_subscription(NamespaceName ns, std::string subscription, std::string role) {
    if (!ns.valid()) co_return invalid_namespace_name();
    const Mutation change = [&subscription, &role](Json& p) -> std::optional<Response> {
      Json& subs = grants_of(p, "subscription_auth_roles");
      auto it = subs.find(subscription);
      if (it == subs.end() || !it->is_array()) return std::nullopt;
      Json kept = Json::array();
      for (const Json& r : *it) {
        if (r != role) kept.push_back(r);
      }
      if (kept.empty()) {
        subs.erase(subscription);
      } else {
        *it = std::move(kept);
      }
      return std::nullopt;
    };
    co_return co_await update_node(configuration(), ns.policies_path(), change, kNoNamespace);
  }

  // The actions of a grant's body: a JSON array of Pulsar's AuthAction names.
  static OrResponse<Json> parse_actions(const Request& req) {
    auto body = parse_body(req);
    if (auto* r = std::get_if<Response>(&body)) return std::move(*r);
    auto parsed = parse_auth_actions(std::get<0>(body));
    if (auto* r = std::get_if<Response>(&parsed)) return std::move(*r);
    return Json(std::get<0>(std::move(parsed)));
  }

  metadata::MetadataStore& configuration() const { return ctx_->configuration(); }
  const AdminContext& context() const { return *ctx_; }

 private:
  const std::shared_ptr<const AdminContext> ctx_;
};

class TopicPermissions {
 public:
  TopicPermissions(std::shared_ptr<const BrokerContext> ctx,
                   std::shared_ptr<const Permissions> namespaces)
      : ctx_(std::move(ctx)), namespaces_(std::move(namespaces)) {}

  // The namespace's grants and the topic's, unioned per role.
  Task<Response> read(const PathParams& p) {
    auto checked = co_await checked_topic(broker(), p);
    if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
    const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
    auto loaded = co_await load(configuration(), namespace_policies_path(name.namespace_name()));
    if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
    const auto& node = std::get<0>(loaded);
    if (!node) co_return error(404, kNoNamespace);
    // The stored grants as the brokers read them (auth::AuthPolicies), names sorted as stored.
    const auth::AuthPolicies policies = auth::AuthPolicies::from_policies(node->value);
    std::map<std::string, std::set<std::string>> merged;
    auto add = [&merged](const std::map<std::string, auth::ActionSet>& by_role) {
      for (const auto& [role, actions] : by_role) {
        auto& names = merged[role];
        for (auth::AuthAction a : actions) names.emplace(auth::to_string(a));
      }
    };
    add(policies.namespace_auth);
    if (auto it = policies.destination_auth.find(name.to_string());
        it != policies.destination_auth.end()) {
      add(it->second);
    }
    Json out = Json::object();
    for (const auto& [role, actions] : merged) out[role] = Json(actions);
    co_return ok_json(out);
  }

  Task<Response> grant(const PathParams& p, const Request& req) {
    auto checked = co_await checked_topic(broker(), p);
    if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
    const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
    const std::string role = p.at("role");
    if (!valid_role(role)) co_return error(412, "Invalid role name");
    auto actions = Permissions::parse_actions(req);
    if (auto* r = std::get_if<Response>(&actions)) co_return std::move(*r);
    const Json granted = std::get<0>(std::move(actions));
    auto exists = co_await topic_exists(broker(), name);
    if (auto* answer = std::get_if<Response>(&exists)) co_return std::move(*answer);
    if (!std::get<bool>(exists)) co_return error(404, "Topic not found");
    const std::string topic = name.to_string();
    const Mutation change = [&topic, &role, &granted](Json& policies) -> std::optional<Response> {
      Json& by_topic = grants_of(policies, "destination_auth")[topic];
      if (!by_topic.is_object()) by_topic = Json::object();
      by_topic[role] = granted;
      return std::nullopt;
    };
    co_return co_await update_node(configuration(), namespace_policies_path(name.namespace_name()),
                                   change, kNoNamespace);
  }

  // The role's grant on the topic and on its partitions; 412 when the topic has none.
  Task<Response> revoke(const PathParams& p) {
    auto checked = co_await checked_topic(broker(), p);
    if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
    const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
    const std::string role = p.at("role");
    if (!valid_role(role)) co_return error(412, "Invalid role name");
    const std::string topic = name.to_string();
    const std::string partition_prefix = topic + "-partition-";
    const Mutation change = [&](Json& policies) -> std::optional<Response> {
      Json& by_topic = grants_of(policies, "destination_auth");
      auto own = by_topic.find(topic);
      if (own == by_topic.end() || !own->is_object() || !own->contains(role)) {
        return error(412, "Permissions are not set at the topic level");
      }
      for (auto it = by_topic.begin(); it != by_topic.end();) {
        const bool ours = it.key() == topic || it.key().rfind(partition_prefix, 0) == 0;
        if (ours && it->is_object()) it->erase(role);
        if (ours && it->is_object() && it->empty()) {
          it = by_topic.erase(it);
        } else {
          ++it;
        }
      }
      return std::nullopt;
    };
    co_return co_await update_node(configuration(), namespace_policies_path(name.namespace_name()),
                                   change, kNoNamespace);
  }

 private:
  BrokerServices broker() const { return ctx_->services; }
  metadata::MetadataStore& configuration() const { return namespaces_->configuration(); }
  const AdminResourcesOptions& options() const { return namespaces_->context().options; }

  const std::shared_ptr<const BrokerContext> ctx_;
  const std::shared_ptr<const Permissions> namespaces_;
};

}  // namespace

void add_permissions(http::Router& router, std::shared_ptr<const AdminContext> ctx,
                     std::shared_ptr<const BrokerContext> broker) {
  auto self = std::make_shared<Permissions>(std::move(ctx));
  const std::string ns = "/admin/v2/namespaces/{tenant}/{namespace}/permissions";
  const Permission admin = Permission::tenant_admin();
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", ns, admin, [self](const Request&, const PathParams& p) {
    return self->read(namespace_of(p), "namespace_auth");
  });
  router.add("POST", ns + "/{role}", admin, [self](const Request& req, const PathParams& p) {
    return self->grant(namespace_of(p), p.at("role"), req);
  });
  router.add("DELETE", ns + "/{role}", admin, [self](const Request&, const PathParams& p) {
    return self->revoke(namespace_of(p), p.at("role"));
  });
  router.add("GET", ns + "/subscription", admin, [self](const Request&, const PathParams& p) {
    return self->read(namespace_of(p), "subscription_auth_roles");
  });
  router.add("POST", ns + "/subscription/{subscription}", admin,
             [self](const Request& req, const PathParams& p) {
               return self->grant_subscription(namespace_of(p), p.at("subscription"), req);
             });
  router.add(
      "DELETE", ns + "/{subscription}/{role}", admin, [self](const Request&, const PathParams& p) {
        return self->revoke_subscription(namespace_of(p), p.at("subscription"), p.at("role"));
      });
  if (!broker) return;
  auto topics = std::make_shared<TopicPermissions>(std::move(broker), self);
  const std::string topic = std::string(kTopicTemplate) + "/permissions";
  router.add("GET", topic, admin,
             [topics](const Request&, const PathParams& p) { return topics->read(p); });
  router.add("POST", topic + "/{role}", admin,
             [topics](const Request& req, const PathParams& p) { return topics->grant(p, req); });
  router.add("DELETE", topic + "/{role}", admin,
             [topics](const Request&, const PathParams& p) { return topics->revoke(p); });
}

}  // namespace magnetar::broker::admin
