// The per-policy routes of a namespace, /admin/v2/namespaces/{tenant}/{namespace}/{policy}:
// those of policy_fields.h (messageTTL, deduplication, persistence, ...), retention,
// backlogQuotaMap and backlogQuota, replication, autoTopicCreation,
// schemaCompatibilityStrategy and bundles, each a field of the namespace's Policies node
// read, or changed by compare-and-set.
// Every route needs an admin of the tenant, as Pulsar's policy operations do. Answers: 200
// with the value, 204 when an optional policy is unset (some read as {} or [] instead), 204
// after a change.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "broker/admin/admin_nodes.h"
#include "broker/admin/admin_routes.h"
#include "broker/admin/policies_json.h"
#include "broker/admin/policy_fields.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

class NamespacePolicies {
 public:
  explicit NamespacePolicies(std::shared_ptr<const AdminContext> ctx) : ctx_(std::move(ctx)) {}

  // GET of one policy field (`field` a string literal).
  Task<Response> get_policy(NamespaceName ns, const char* field, Unset unset);
  // DELETE of one policy field (`field` a string literal).
  Task<Response> remove_policy(NamespaceName ns, const char* field);
  Task<Response> set_retention(NamespaceName ns, const Request& req);
  // GET, POST, DELETE of a policy_fields() one.
  Task<Response> get_field(NamespaceName ns, const PolicyField& f);
  Task<Response> set_field(NamespaceName ns, const Request& req, const PolicyField& f);
  Task<Response> remove_field(NamespaceName ns, const PolicyField& f);
  Task<Response> set_backlog_quota(NamespaceName ns, const Request& req);
  Task<Response> remove_backlog_quota(NamespaceName ns, const Request& req);
  Task<Response> set_replication(NamespaceName ns, const Request& req);
  Task<Response> set_auto_topic_creation(NamespaceName ns, const Request& req);
  Task<Response> set_schema_compatibility(NamespaceName ns, const Request& req);

 private:
  Task<Response> update_policies(const NamespaceName& ns, const Mutation& mutate);
  metadata::MetadataStore& configuration() const { return ctx_->configuration(); }

  const std::shared_ptr<const AdminContext> ctx_;
};

Task<Response> NamespacePolicies::get_policy(NamespaceName ns, const char* field, Unset unset) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto loaded = co_await load(configuration(), ns.policies_path());
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoNamespace);
  const std::string_view name = field;
  if (name == "bundles") {
    co_return ok_json(
        effective_bundles(node->value, ctx_->options.default_number_of_namespace_bundles));
  }
  const Json& value = member(node->value, field);
  if (!value.is_null()) co_return ok_json(value);
  if (unset == Unset::kEmptyObject) co_return ok_json(Json::object());
  if (unset == Unset::kEmptyList) co_return ok_json(Json::array());
  if (unset == Unset::kUndefined) co_return ok_json(Json("UNDEFINED"));
  if (unset == Unset::kFalse) co_return ok_json(Json(false));
  if (unset == Unset::kBrokerSchemaAutoUpdate) {
    co_return ok_json(Json(ctx_->options.allow_auto_update_schema));
  }
  co_return no_content();  // Pulsar answers an unset policy (null) with 204
}

Task<Response> NamespacePolicies::get_field(NamespaceName ns, const PolicyField& f) {
  if (!f.per_cluster) co_return co_await get_policy(std::move(ns), f.namespace_field, f.namespace_unset);
  if (!ns.valid()) co_return invalid_namespace_name();
  auto loaded = co_await load(configuration(), ns.policies_path());
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoNamespace);
  const Json& value = namespace_value(f, node->value, ctx_->options.cluster_name);
  if (value.is_null()) co_return no_content();
  co_return ok_json(value);
}

Task<Response> NamespacePolicies::remove_field(NamespaceName ns, const PolicyField& f) {
  if (!f.per_cluster) co_return co_await remove_policy(std::move(ns), f.namespace_field);
  if (!ns.valid()) co_return invalid_namespace_name();
  const std::string& cluster = ctx_->options.cluster_name;
  const Mutation remove = [&f, &cluster](Json& p) -> std::optional<Response> {
    for (const char* field : {f.namespace_field, f.namespace_also}) {
      if (field != nullptr && p.contains(field) && p[field].is_object()) p[field].erase(cluster);
    }
    return std::nullopt;
  };
  co_return co_await update_policies(ns, remove);
}

Task<Response> NamespacePolicies::update_policies(const NamespaceName& ns, const Mutation& mutate) {
  co_return co_await update_node(configuration(), ns.policies_path(), mutate, kNoNamespace);
}

Task<Response> NamespacePolicies::remove_policy(NamespaceName ns, const char* field) {
  if (!ns.valid()) co_return invalid_namespace_name();
  const Mutation remove = [field](Json& p) -> std::optional<Response> {
    p.erase(field);
    return std::nullopt;
  };
  co_return co_await update_policies(ns, remove);
}

Task<Response> NamespacePolicies::set_retention(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_retention(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const Json& retention = std::get<0>(parsed);
  const Mutation set = [&retention](Json& p) -> std::optional<Response> {
    if (!quota_fits_retention(member(p, "backlog_quota_map"), retention)) {
      return error(412, kRetentionBelowQuota);
    }
    p["retention_policies"] = retention;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

Task<Response> NamespacePolicies::set_field(NamespaceName ns, const Request& req,
                                            const PolicyField& f) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = f.parse(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const Json& value = std::get<0>(parsed);
  if (std::string_view(f.namespace_route) == "isAllowAutoUpdateSchema" && value == true &&
      req.query.count("allowAutoUpdateSchemaWithReplicator") &&
      req.query.at("allowAutoUpdateSchemaWithReplicator") == "false") {
    co_return error(400, "Can not enable for all producers but denies for replicators, which is "
                         "meaningless");
  }
  const std::string& cluster = ctx_->options.cluster_name;
  const Mutation set = [&value, &f, &cluster](Json& p) -> std::optional<Response> {
    if (!f.per_cluster) {
      p[f.namespace_field] = value;
      return std::nullopt;
    }
    for (const char* field : {f.namespace_field, f.namespace_also}) {
      if (field == nullptr) continue;
      if (!p[field].is_object()) p[field] = Json::object();
      p[field][cluster] = value;
    }
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

Task<Response> NamespacePolicies::set_backlog_quota(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto type = backlog_quota_type(req);
  if (!type) co_return error(400, "backlogQuotaType must be destination_storage or message_age");
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_backlog_quota(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const Json& quota = std::get<0>(parsed);
  const Mutation set = [&quota, &type](Json& p) -> std::optional<Response> {
    Json quotas = member(p, "backlog_quota_map");
    if (!quotas.is_object()) quotas = Json::object();
    quotas[*type] = quota;
    if (!quota_fits_retention(quotas, member(p, "retention_policies"))) {
      return error(412, kQuotaAboveRetention);
    }
    p["backlog_quota_map"] = std::move(quotas);
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

Task<Response> NamespacePolicies::remove_backlog_quota(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto type = backlog_quota_type(req);
  if (!type) co_return error(400, "backlogQuotaType must be destination_storage or message_age");
  const Mutation remove = [&type](Json& p) -> std::optional<Response> {
    if (p.contains("backlog_quota_map") && p["backlog_quota_map"].is_object()) {
      p["backlog_quota_map"].erase(*type);
    }
    return std::nullopt;
  };
  co_return co_await update_policies(ns, remove);
}

Task<Response> NamespacePolicies::set_replication(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_string_list(std::get<0>(body), "The replication clusters");
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const std::vector<std::string>& clusters = std::get<0>(parsed);
  if (clusters.empty()) co_return error(412, "ClusterIds should not be null or empty");
  auto exists = co_await configuration().exists(ns.policies_path());
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoNamespace);
  if (auto refused = co_await check_replication_clusters(configuration(), ns.tenant, clusters)) {
    co_return std::move(*refused);
  }
  const Json list = clusters;
  const Mutation set = [&list](Json& p) -> std::optional<Response> {
    p["replication_clusters"] = list;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

// Pulsar's AutoTopicCreationOverride: {allowAutoTopicCreation, topicType, defaultNumPartitions},
// checked as Pulsar does (412 with its reason).
Task<Response> NamespacePolicies::set_auto_topic_creation(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  const Json& o = std::get<0>(body);
  if (!o.is_object() || !o.contains("allowAutoTopicCreation") ||
      !o["allowAutoTopicCreation"].is_boolean()) {
    co_return error(412, "Invalid configuration for autoTopicCreationOverride. the detail is "
                         "[allowAutoTopicCreation] cannot be null");
  }
  Json override = {{"allowAutoTopicCreation", o["allowAutoTopicCreation"].get<bool>()}};
  if (override["allowAutoTopicCreation"].get<bool>()) {
    const std::string type = o.value("topicType", "");
    if (type != "partitioned" && type != "non-partitioned") {
      co_return error(412, "Invalid configuration for autoTopicCreationOverride. the detail is "
                           "[topicType] must be partitioned or non-partitioned");
    }
    override["topicType"] = type;
    if (type == "partitioned") {
      const Json n = o.value("defaultNumPartitions", Json());
      if (!n.is_number_integer() || n.get<int64_t>() <= 0) {
        co_return error(412, "Invalid configuration for autoTopicCreationOverride. the detail is "
                             "[defaultNumPartitions] cannot be less than 1 for partition type.");
      }
      override["defaultNumPartitions"] = n;
    }
  }
  const Mutation set = [&override](Json& p) -> std::optional<Response> {
    p["autoTopicCreationOverride"] = override;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

Task<Response> NamespacePolicies::set_schema_compatibility(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  const Json& v = std::get<0>(body);
  static constexpr std::string_view kStrategies[] = {
      "UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
      "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"};
  const std::string strategy = v.is_string() ? v.get<std::string>() : "";
  if (std::find(std::begin(kStrategies), std::end(kStrategies), strategy) == std::end(kStrategies)) {
    co_return error(400, fmt::format("Invalid schema compatibility strategy {}", v.dump()));
  }
  const Mutation set = [&strategy](Json& p) -> std::optional<Response> {
    p["schema_compatibility_strategy"] = strategy;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

}  // namespace

void add_namespace_policies(http::Router& router, std::shared_ptr<const AdminContext> ctx) {
  auto self = std::make_shared<NamespacePolicies>(std::move(ctx));
  const std::string ns = "/admin/v2/namespaces/{tenant}/{namespace}/";
  const Permission admin = Permission::tenant_admin();
  // A policy field read: GET .../{path} answers `field`. The request and its parameters
  // outlive each returned task (the router awaits it).
  auto get = [&](const char* path, const char* field, Unset unset) {
    router.add("GET", ns + path, admin, [self, field, unset](const Request&, const PathParams& p) {
      return self->get_policy(namespace_of(p), field, unset);
    });
  };
  auto remove = [&](const char* path, const char* field) {
    router.add("DELETE", ns + path, admin, [self, field](const Request&, const PathParams& p) {
      return self->remove_policy(namespace_of(p), field);
    });
  };
  using Set = Task<Response> (NamespacePolicies::*)(NamespaceName, const Request&);
  auto set = [&](const char* method, const char* path, Set op) {
    router.add(method, ns + path, admin, [self, op](const Request& req, const PathParams& p) {
      return ((*self).*op)(namespace_of(p), req);
    });
  };
  get("retention", "retention_policies", Unset::kNoContent);
  set("POST", "retention", &NamespacePolicies::set_retention);
  remove("retention", "retention_policies");
  for (const PolicyField& f : policy_fields()) {
    if (f.namespace_route == nullptr) continue;
    const std::string path = ns + f.namespace_route;
    router.add("GET", path, admin, [self, &f](const Request&, const PathParams& p) {
      return self->get_field(namespace_of(p), f);
    });
    router.add(f.namespace_set_method, path, admin,
               [self, &f](const Request& req, const PathParams& p) {
                 return self->set_field(namespace_of(p), req, f);
               });
    router.add("DELETE", path, admin, [self, &f](const Request&, const PathParams& p) {
      return self->remove_field(namespace_of(p), f);
    });
  }
  get("backlogQuotaMap", "backlog_quota_map", Unset::kEmptyObject);
  set("POST", "backlogQuota", &NamespacePolicies::set_backlog_quota);
  set("DELETE", "backlogQuota", &NamespacePolicies::remove_backlog_quota);
  get("replication", "replication_clusters", Unset::kEmptyList);
  set("POST", "replication", &NamespacePolicies::set_replication);
  get("autoTopicCreation", "autoTopicCreationOverride", Unset::kNoContent);
  set("POST", "autoTopicCreation", &NamespacePolicies::set_auto_topic_creation);
  remove("autoTopicCreation", "autoTopicCreationOverride");
  get("schemaCompatibilityStrategy", "schema_compatibility_strategy", Unset::kUndefined);
  set("PUT", "schemaCompatibilityStrategy", &NamespacePolicies::set_schema_compatibility);
  get("bundles", "bundles", Unset::kEmptyObject);
}

}  // namespace magnetar::broker::admin
