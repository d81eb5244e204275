// A topic's own policies, /admin/v2/persistent/{tenant}/{namespace}/{topic}/...:
//
//   GET    .../replication[?applied=true][&isGlobal=true]   the topic's replication clusters
//   POST   .../replication[?isGlobal=true]                  set them (a JSON list)
//   DELETE .../replication[?isGlobal=true]                  the namespace's apply again
//   the same three for each of policy_fields.h (messageTTL, deduplicationEnabled,
//   persistence, ...) and retention; GET .../backlogQuotaMap, POST and DELETE
//   .../backlogQuota[?backlogQuotaType=destination_storage|message_age].
//
// With ?applied=true a GET answers the value in force: the topic's, else its namespace's,
// else the broker's. Served only with topicLevelPoliciesEnabled (else 405, as Pulsar).
//
// Stored as store_paths.h says (topic_policies_path): local ones (this cluster only) in the
// cluster's store, global ones (isGlobal=true, every cluster sharing the configuration store)
// in the configuration store. A topic's effective value is its local policy, else its global
// one, else its namespace's. Set on a partitioned topic's name, a policy applies to every
// partition; on a partition's name it is refused. The topic must exist (404 "Topic not
// found", as Pulsar answers).
//
// Setting the replication clusters checks them as the namespace's (each exists and is allowed
// for the tenant) and, for a partitioned topic, makes the topic exist with as many partitions
// in each other cluster (through the replication room's hook, over that cluster's admin REST
// API); a cluster whose topic has another shape is refused with 409 naming it, and nothing is
// changed. Reads need the tenant's admin, as Pulsar's topic policies do; so do writes.

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_nodes.h"
#include "broker/admin/admin_routes.h"
#include "broker/admin/policies_json.h"
#include "broker/admin/policy_fields.h"
#include "broker/admin/topic_access.h"
#include "broker/config/store_paths.h"
#include "broker/service/replication_hooks.h"
#include "broker/service/topic_registry.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

constexpr const char* kField = "replicationClusters";

class TopicPolicies {
 public:
  explicit TopicPolicies(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> get_replication(const Request& req, const PathParams& p);
  Task<Response> set_replication(const Request& req, const PathParams& p);
  Task<Response> remove_replication(const Request& req, const PathParams& p);
  Task<Response> get_field(const Request& req, const PathParams& p, const PolicyField& f);
  Task<Response> set_field(const Request& req, const PathParams& p, const PolicyField& f);
  Task<Response> remove_field(const Request& req, const PathParams& p, const char* field);
  Task<Response> get_retention(const Request& req, const PathParams& p);
  Task<Response> set_retention(const Request& req, const PathParams& p);
  Task<Response> get_backlog_quotas(const Request& req, const PathParams& p);
  Task<Response> set_backlog_quota(const Request& req, const PathParams& p);
  Task<Response> remove_backlog_quota(const Request& req, const PathParams& p);

 private:
  const BrokerServices& broker() const { return ctx_->services; }
  metadata::MetadataStore& store(bool global) const {
    return global ? *broker().stores.configuration : *broker().stores.cluster;
  }
  // The checked name of an existing topic that is not a partition, or the answer.
  Task<OrResponse<protocol::TopicName>> existing_topic(const PathParams& p);
  // The topic's policy node's value for `field` (null when unset).
  Task<OrResponse<Json>> stored(const protocol::TopicName& name, bool global, const char* field);
  // Sets (or, with null, removes) one field of the topic's policy node.
  Task<Response> update(const protocol::TopicName& name, bool global, const char* field,
                        Json value);
  // The topic's policy node at one level ({} when it has none), or the answer.
  Task<OrResponse<Json>> level(const protocol::TopicName& name, bool global);
  // The local and global levels and the namespace's Policies (for ?applied=true).
  struct Levels {
    Json local, global, ns;
  };
  Task<OrResponse<Levels>> levels(const protocol::TopicName& name);

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<OrResponse<protocol::TopicName>> TopicPolicies::existing_topic(const PathParams& p) {
  if (!broker().config.topic_level_policies_enabled) {
    co_return error(405,
                    "Topic level policies is disabled, to enable the topic level policy and retry.");
  }
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  if (name.is_partition()) {
    co_return error(412, "Not allowed to set/get topic policy for a partition");
  }
  auto exists = co_await topic_exists(broker(), name);
  if (auto* answer = std::get_if<Response>(&exists)) co_return std::move(*answer);
  if (!std::get<bool>(exists)) co_return error(404, "Topic not found");
  co_return name;
}

Task<OrResponse<Json>> TopicPolicies::level(const protocol::TopicName& name, bool global) {
  auto loaded = co_await load(store(global), topic_policies_path(name, global));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  const auto& node = std::get<0>(loaded);
  if (!node) co_return Json::object();
  co_return node->value;
}

Task<OrResponse<Json>> TopicPolicies::stored(const protocol::TopicName& name, bool global,
                                             const char* field) {
  auto value = co_await level(name, global);
  if (auto* r = std::get_if<Response>(&value)) co_return std::move(*r);
  co_return member(std::get<0>(value), field);
}

Task<OrResponse<TopicPolicies::Levels>> TopicPolicies::levels(const protocol::TopicName& name) {
  Levels out;
  for (const bool global : {false, true}) {
    auto value = co_await level(name, global);
    if (auto* r = std::get_if<Response>(&value)) co_return std::move(*r);
    (global ? out.global : out.local) = std::get<0>(std::move(value));
  }
  auto ns =
      co_await load(*broker().stores.configuration, namespace_policies_path(name.namespace_name()));
  if (auto* r = std::get_if<Response>(&ns)) co_return std::move(*r);
  const auto& node = std::get<0>(ns);
  if (!node) co_return error(404, kNoNamespace);
  out.ns = node->value;
  co_return out;
}

Task<Response> TopicPolicies::update(const protocol::TopicName& name, bool global,
                                     const char* field, Json value) {
  metadata::MetadataStore& s = store(global);
  const std::string path = topic_policies_path(name, global);
  for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
    auto loaded = co_await load(s, path);
    if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
    const auto& node = std::get<0>(loaded);
    Json policies = node ? node->value : Json::object();
    if (value.is_null()) {
      if (!node) co_return no_content();
      policies.erase(field);
    } else {
      policies[field] = value;
    }
    metadata::PutOptions at_version;
    at_version.expected_version = node ? node->version : -1;
    if (!node) {
      auto made = co_await s.put_recursive(path, policies.dump(), at_version);
      if (made.ok()) co_return no_content();
      if (!made.status().is(Errc::kBadVersion)) co_return store_error(made.status());
      continue;
    }
    auto put = co_await s.put(path, policies.dump(), at_version);
    if (put.ok()) co_return no_content();
    if (!put.status().is(Errc::kBadVersion) && !put.status().is(Errc::kNotFound)) {
      co_return store_error(put.status());
    }
  }
  co_return error(409, "Concurrent modification");
}

Task<Response> TopicPolicies::get_replication(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  const bool applied = query_flag(req, "applied");
  // applied: local, else global, else the namespace's; otherwise the one asked for.
  for (const bool global : {false, true}) {
    if (!applied && global != query_flag(req, "isGlobal")) continue;
    auto value = co_await stored(name, global, kField);
    if (auto* r = std::get_if<Response>(&value)) co_return std::move(*r);
    if (!std::get<0>(value).is_null()) co_return ok_json(Json(stored_strings(std::get<0>(value))));
  }
  if (!applied) co_return no_content();
  auto ns =
      co_await load(*broker().stores.configuration, namespace_policies_path(name.namespace_name()));
  if (auto* r = std::get_if<Response>(&ns)) co_return std::move(*r);
  const auto& node = std::get<0>(ns);
  if (!node) co_return error(404, kNoNamespace);
  co_return ok_json(Json(stored_strings(member(node->value, "replication_clusters"))));
}

Task<Response> TopicPolicies::set_replication(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_string_list(std::get<0>(body), "The replication clusters");
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const std::vector<std::string> clusters = std::get<0>(std::move(parsed));
  if (clusters.empty()) co_return error(412, "ClusterIds should not be null or empty");
  if (auto refused = co_await check_replication_clusters(*broker().stores.configuration,
                                                         name.tenant(), clusters)) {
    co_return std::move(*refused);
  }
  auto partitions = co_await broker().topics.partitions(name, false);
  if (!partitions.ok()) co_return broker_error(partitions.status());
  TopicReplication* replication = broker().topics.replication();
  if (*partitions > 0 && replication != nullptr) {
    for (const std::string& cluster : clusters) {
      if (cluster == broker().config.cluster_name) continue;
      Status shaped = co_await replication->prepare_remote_topic(cluster, name);
      if (shaped.ok()) continue;
      if (shaped.is(Errc::kInvalidArgument)) {
        co_return error(409, fmt::format("Topic {} already exists in cluster {} with different "
                                         "partitions: {}",
                                         name.to_string(), cluster, shaped.message()));
      }
      co_return error(503, fmt::format("Cannot make the topic's partitions in cluster {}: {}",
                                       cluster, shaped.message()));
    }
  }
  co_return co_await update(name, query_flag(req, "isGlobal"), kField, Json(clusters));
}

Task<Response> TopicPolicies::remove_replication(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  co_return co_await update(name, query_flag(req, "isGlobal"), kField, Json());
}

Task<Response> TopicPolicies::get_field(const Request& req, const PathParams& p,
                                        const PolicyField& f) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  if (query_flag(req, "applied")) {
    auto all = co_await levels(name);
    if (auto* r = std::get_if<Response>(&all)) co_return std::move(*r);
    const Levels& l = std::get<Levels>(all);
    co_return ok_json(
        applied_value(f, l.local, l.global, l.ns, *broker().topics.dynamic_config().current()));
  }
  auto value = co_await stored(name, query_flag(req, "isGlobal"), f.topic_field);
  if (auto* r = std::get_if<Response>(&value)) co_return std::move(*r);
  if (std::get<0>(value).is_null()) co_return no_content();
  co_return ok_json(std::get<0>(value));
}

Task<Response> TopicPolicies::set_field(const Request& req, const PathParams& p,
                                        const PolicyField& f) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  Json given = std::get<0>(std::move(body));
  if (auto q = f.topic_query ? req.query.find(f.topic_query) : req.query.end();
      q != req.query.end() && given.is_null()) {
    given = Json::parse(q->second, nullptr, false);  // a number: `?messageTTL=60`
    if (given.is_discarded()) given = Json(q->second);
  }
  auto parsed = f.parse(given);
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  co_return co_await update(name, query_flag(req, "isGlobal"), f.topic_field,
                            std::get<0>(std::move(parsed)));
}

Task<Response> TopicPolicies::remove_field(const Request& req, const PathParams& p,
                                           const char* field) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  co_return co_await update(name, query_flag(req, "isGlobal"), field, Json());
}

constexpr const char* kRetention = "retentionPolicies";
constexpr const char* kQuotas = "backLogQuotaMap";

Task<Response> TopicPolicies::get_retention(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  if (query_flag(req, "applied")) {
    auto all = co_await levels(name);
    if (auto* r = std::get_if<Response>(&all)) co_return std::move(*r);
    const Levels& l = std::get<Levels>(all);
    for (const Json* v : {&member(l.local, kRetention), &member(l.global, kRetention),
                          &member(l.ns, "retention_policies")}) {
      if (!v->is_null()) co_return ok_json(*v);
    }
    const auto& ml = broker().config.managed_ledger;
    co_return ok_json(Json{{"retentionTimeInMinutes", static_cast<int64_t>(ml.retention_time_minutes)},
                           {"retentionSizeInMB", ml.retention_size_mb}});
  }
  auto value = co_await stored(name, query_flag(req, "isGlobal"), kRetention);
  if (auto* r = std::get_if<Response>(&value)) co_return std::move(*r);
  if (std::get<0>(value).is_null()) co_return no_content();
  co_return ok_json(std::get<0>(value));
}

Task<Response> TopicPolicies::set_retention(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_retention(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const bool global = query_flag(req, "isGlobal");
  auto quotas = co_await stored(name, global, kQuotas);
  if (auto* r = std::get_if<Response>(&quotas)) co_return std::move(*r);
  if (!quota_fits_retention(std::get<0>(quotas), std::get<0>(parsed))) {
    co_return error(412, kRetentionBelowQuota);
  }
  co_return co_await update(name, global, kRetention, std::get<0>(std::move(parsed)));
}

Task<Response> TopicPolicies::get_backlog_quotas(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  if (query_flag(req, "applied")) {
    auto all = co_await levels(name);
    if (auto* r = std::get_if<Response>(&all)) co_return std::move(*r);
    const Levels& l = std::get<Levels>(all);
    for (const Json* v : {&member(l.local, kQuotas), &member(l.global, kQuotas),
                          &member(l.ns, "backlog_quota_map")}) {
      if (v->is_object() && !v->empty()) co_return ok_json(*v);
    }
    const auto& c = broker().config;
    Json defaults = Json::object();
    if (c.backlog_quota_default_limit_bytes >= 0) {
      defaults["destination_storage"] = {{"limitSize", c.backlog_quota_default_limit_bytes},
                                         {"limitTime", -1},
                                         {"policy", c.backlog_quota_default_retention_policy}};
    }
    co_return ok_json(defaults);
  }
  auto value = co_await stored(name, query_flag(req, "isGlobal"), kQuotas);
  if (auto* r = std::get_if<Response>(&value)) co_return std::move(*r);
  co_return ok_json(std::get<0>(value).is_object() ? std::get<0>(value) : Json::object());
}

Task<Response> TopicPolicies::set_backlog_quota(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  auto type = backlog_quota_type(req);
  if (!type) co_return error(400, "backlogQuotaType must be destination_storage or message_age");
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_backlog_quota(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const bool global = query_flag(req, "isGlobal");
  auto current = co_await level(name, global);
  if (auto* r = std::get_if<Response>(&current)) co_return std::move(*r);
  Json quotas = member(std::get<0>(current), kQuotas);
  if (!quotas.is_object()) quotas = Json::object();
  quotas[*type] = std::get<0>(std::move(parsed));
  if (!quota_fits_retention(quotas, member(std::get<0>(current), kRetention))) {
    co_return error(412, kQuotaAboveRetention);
  }
  co_return co_await update(name, global, kQuotas, std::move(quotas));
}

Task<Response> TopicPolicies::remove_backlog_quota(const Request& req, const PathParams& p) {
  auto found = co_await existing_topic(p);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(found));
  auto type = backlog_quota_type(req);
  if (!type) co_return error(400, "backlogQuotaType must be destination_storage or message_age");
  const bool global = query_flag(req, "isGlobal");
  auto quotas = co_await stored(name, global, kQuotas);
  if (auto* r = std::get_if<Response>(&quotas)) co_return std::move(*r);
  Json left = std::get<0>(std::move(quotas));
  if (!left.is_object()) co_return no_content();
  left.erase(*type);
  co_return co_await update(name, global, kQuotas, left.empty() ? Json() : std::move(left));
}

}  // namespace

void add_topic_policies(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<TopicPolicies>(std::move(ctx));
  const std::string replication = std::string(kTopicTemplate) + "/replication";
  const Permission admin = Permission::tenant_admin();
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", replication, admin, [self](const Request& req, const PathParams& p) {
    return self->get_replication(req, p);
  });
  router.add("POST", replication, admin, [self](const Request& req, const PathParams& p) {
    return self->set_replication(req, p);
  });
  router.add("DELETE", replication, admin, [self](const Request& req, const PathParams& p) {
    return self->remove_replication(req, p);
  });
  const std::string topic = std::string(kTopicTemplate) + "/";
  for (const PolicyField& f : policy_fields()) {
    if (f.topic_route == nullptr) continue;
    const std::string path = topic + f.topic_route;
    router.add("GET", path, admin, [self, &f](const Request& req, const PathParams& p) {
      return self->get_field(req, p, f);
    });
    router.add("POST", path, admin, [self, &f](const Request& req, const PathParams& p) {
      return self->set_field(req, p, f);
    });
    router.add("DELETE", path, admin, [self, &f](const Request& req, const PathParams& p) {
      return self->remove_field(req, p, f.topic_field);
    });
  }
  using Route = Task<Response> (TopicPolicies::*)(const Request&, const PathParams&);
  auto route = [&](const char* method, const char* suffix, Route op) {
    router.add(method, topic + suffix, admin, [self, op](const Request& req, const PathParams& p) {
      return ((*self).*op)(req, p);
    });
  };
  route("GET", "retention", &TopicPolicies::get_retention);
  route("POST", "retention", &TopicPolicies::set_retention);
  router.add("DELETE", topic + "retention", admin,
             [self](const Request& req, const PathParams& p) {
               return self->remove_field(req, p, kRetention);
             });
  route("GET", "backlogQuotaMap", &TopicPolicies::get_backlog_quotas);
  route("POST", "backlogQuota", &TopicPolicies::set_backlog_quota);
  route("DELETE", "backlogQuota", &TopicPolicies::remove_backlog_quota);
}

}  // namespace magnetar::broker::admin
