#include "broker/admin/policy_fields.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>

#include "broker/admin/policies_json.h"
#include "broker/config/broker_config.h"

namespace magnetar::broker::admin {

namespace {

OrResponse<Json> parse_message_ttl(const Json& body) {
  auto ttl = integer_in(body, kInt32Min, kInt32Max);
  if (!ttl) return error(400, "The message TTL must be a 32-bit integer (seconds)");
  if (*ttl < 0) return error(412, "Invalid value for message TTL");
  return Json(*ttl);
}

OrResponse<Json> parse_boolean(const Json& body) {
  if (!body.is_boolean()) return error(400, "The body must be true or false");
  return body;
}

// A non-negative 32-bit count; `what` names it in the 412.
OrResponse<Json> parse_count(const Json& body, const char* what) {
  auto n = integer_in(body, kInt32Min, kInt32Max);
  if (!n) return error(400, fmt::format("{} must be a 32-bit integer", what));
  if (*n < 0) return error(412, fmt::format("{} must be 0 or more", what));
  return Json(*n);
}

OrResponse<Json> parse_compaction_threshold(const Json& body) {
  auto n = integer_in(body, INT64_MIN, INT64_MAX);
  if (!n) return error(400, "compactionThreshold must be a 64-bit integer (bytes)");
  if (*n < 0) return error(412, "compactionThreshold must be 0 or more");
  return Json(*n);
}

OrResponse<Json> parse_max_producers(const Json& body) {
  return parse_count(body, "maxProducers");
}

OrResponse<Json> parse_max_consumers(const Json& body) {
  return parse_count(body, "maxConsumers");
}

OrResponse<Json> parse_snapshot_interval(const Json& body) {
  auto n = integer_in(body, kInt32Min, kInt32Max);
  if (!n) return error(400, "The interval must be a 32-bit integer (seconds)");
  if (*n < 0) return error(412, "interval must be 0 or more");
  return Json(*n);
}

// Pulsar's PersistencePolicies, checked as Pulsar's validatePersistencePolicies does (400s,
// with its managedLedgerMax{EnsembleSize,WriteQuorum,AckQuorum} defaults of 5). Like
// Pulsar's, not against the bookies there are: a ledger needing more fails when created.
OrResponse<Json> parse_persistence(const Json& body) {
  if (!body.is_object()) return error(400, "PersistencePolicies must be a JSON object");
  int64_t quorums[3] = {2, 2, 2};
  const char* const names[3] = {"bookkeeperEnsemble", "bookkeeperWriteQuorum",
                                "bookkeeperAckQuorum"};
  const char* const labels[3] = {"Bookkeeper-Ensemble", "Bookkeeper-WriteQuorum",
                                 "Bookkeeper-AckQuorum"};
  for (int i = 0; i < 3; ++i) {
    const Json& v = member(body, names[i]);
    if (v.is_null()) continue;
    auto n = integer_in(v, kInt32Min, kInt32Max);
    if (!n) return error(400, fmt::format("{} must be a 32-bit integer", names[i]));
    quorums[i] = *n;
  }
  for (int i = 0; i < 3; ++i) {
    if (quorums[i] <= 0 || quorums[i] > 5) {
      return error(400, fmt::format("{} must be <= 5 and > 0.", labels[i]));
    }
  }
  if (quorums[0] < quorums[1] || quorums[1] < quorums[2]) {
    return error(400, fmt::format("Bookkeeper Ensemble ({}) >= WriteQuorum ({}) >= AckQuorum ({})",
                                  quorums[0], quorums[1], quorums[2]));
  }
  double rate = 0;
  if (const Json& r = member(body, "managedLedgerMaxMarkDeleteRate"); !r.is_null()) {
    if (!r.is_number()) return error(400, "managedLedgerMaxMarkDeleteRate must be a number");
    rate = r.get<double>();
    if (rate < 0) return error(400, "managedLedgerMaxMarkDeleteRate must be >= 0");
  }
  Json out = {{"bookkeeperEnsemble", quorums[0]},
              {"bookkeeperWriteQuorum", quorums[1]},
              {"bookkeeperAckQuorum", quorums[2]},
              {"managedLedgerMaxMarkDeleteRate", rate}};
  if (const Json& c = member(body, "managedLedgerStorageClassName"); c.is_string()) {
    out["managedLedgerStorageClassName"] = c;
  }
  return out;
}

OrResponse<Json> parse_inactive_topic_policies(const Json& body) {
  if (!body.is_object()) return error(400, "InactiveTopicPolicies must be a JSON object");
  Json out = {{"inactiveTopicDeleteMode", "delete_when_no_subscriptions"},
              {"maxInactiveDurationSeconds", 0},
              {"deleteWhileInactive", false}};
  if (const Json& m = member(body, "inactiveTopicDeleteMode"); !m.is_null()) {
    if (m != "delete_when_no_subscriptions" && m != "delete_when_subscriptions_caught_up") {
      return error(400, "inactiveTopicDeleteMode must be delete_when_no_subscriptions or "
                        "delete_when_subscriptions_caught_up");
    }
    out["inactiveTopicDeleteMode"] = m;
  }
  if (const Json& d = member(body, "maxInactiveDurationSeconds"); !d.is_null()) {
    auto n = integer_in(d, kInt32Min, kInt32Max);
    if (!n) return error(400, "maxInactiveDurationSeconds must be a 32-bit integer");
    out["maxInactiveDurationSeconds"] = *n;
  }
  if (const Json& w = member(body, "deleteWhileInactive"); !w.is_null()) {
    if (!w.is_boolean()) return error(400, "deleteWhileInactive must be true or false");
    out["deleteWhileInactive"] = w;
  }
  return out;
}

// Pulsar's DelayedDeliveryPolicies: absent fields at its defaults (0, false, 0).
OrResponse<Json> parse_delayed_delivery(const Json& body) {
  if (!body.is_object()) return error(400, "DelayedDeliveryPolicies must be a JSON object");
  Json out = {{"tickTime", 0}, {"active", false}, {"maxDeliveryDelayInMillis", 0}};
  for (const char* name : {"tickTime", "maxDeliveryDelayInMillis"}) {
    const Json& v = member(body, name);
    if (v.is_null()) continue;
    auto n = integer_in(v, INT64_MIN, INT64_MAX);
    if (!n) return error(400, fmt::format("{} must be a 64-bit integer (milliseconds)", name));
    out[name] = *n;
  }
  if (const Json& a = member(body, "active"); !a.is_null()) {
    if (!a.is_boolean()) return error(400, "active must be true or false");
    out["active"] = a;
  }
  return out;
}

// An integer field of a rate object: absent gives `fallback`; 400 when not an integer.
std::optional<http::Response> rate_member(const Json& body, const char* name, int64_t min, int64_t max,
                                    int64_t fallback, Json& out) {
  const Json& v = member(body, name);
  if (v.is_null()) {
    out[name] = fallback;
    return std::nullopt;
  }
  auto n = integer_in(v, min, max);
  if (!n) return error(400, fmt::format("{} must be an integer", name));
  out[name] = *n;
  return std::nullopt;
}

// Pulsar's DispatchRate, its fields in its order, absent ones at its builder's defaults.
OrResponse<Json> parse_dispatch_rate(const Json& body) {
  if (!body.is_object()) return error(400, "DispatchRate must be a JSON object");
  Json out = Json::object();
  if (auto r = rate_member(body, "dispatchThrottlingRateInMsg", kInt32Min, kInt32Max, -1, out)) {
    return *r;
  }
  if (auto r = rate_member(body, "dispatchThrottlingRateInByte", INT64_MIN, INT64_MAX, -1, out)) {
    return *r;
  }
  const Json& relative = member(body, "relativeToPublishRate");
  if (!relative.is_null() && !relative.is_boolean()) {
    return error(400, "relativeToPublishRate must be true or false");
  }
  out["relativeToPublishRate"] = relative.is_boolean() && relative.get<bool>();
  if (auto r = rate_member(body, "ratePeriodInSecond", kInt32Min, kInt32Max, 1, out)) return *r;
  return out;
}

OrResponse<Json> parse_publish_rate(const Json& body) {
  if (!body.is_object()) return error(400, "PublishRate must be a JSON object");
  Json out = Json::object();
  if (auto r = rate_member(body, "publishThrottlingRateInMsg", kInt32Min, kInt32Max, -1, out)) {
    return *r;
  }
  if (auto r = rate_member(body, "publishThrottlingRateInByte", INT64_MIN, INT64_MAX, -1, out)) {
    return *r;
  }
  return out;
}

OrResponse<Json> parse_subscribe_rate(const Json& body) {
  if (!body.is_object()) return error(400, "SubscribeRate must be a JSON object");
  Json out = Json::object();
  if (auto r = rate_member(body, "subscribeThrottlingRatePerConsumer", kInt32Min, kInt32Max, -1,
                           out)) {
    return *r;
  }
  if (auto r = rate_member(body, "ratePeriodInSecond", kInt32Min, kInt32Max, 30, out)) return *r;
  return out;
}

bool positive(const Json& v, const char* name) {
  const Json& n = member(v, name);
  return n.is_number_integer() && n.get<int64_t>() > 0;
}
bool dispatch_rate_decides(const Json& v) {
  return positive(v, "dispatchThrottlingRateInMsg") || positive(v, "dispatchThrottlingRateInByte");
}
bool publish_rate_decides(const Json& v) {
  return positive(v, "publishThrottlingRateInMsg") || positive(v, "publishThrottlingRateInByte");
}
bool subscribe_rate_decides(const Json& v) {
  return positive(v, "subscribeThrottlingRatePerConsumer") && positive(v, "ratePeriodInSecond");
}

Json dispatch_rate_json(int64_t messages, int64_t bytes) {
  return {{"dispatchThrottlingRateInMsg", messages},
          {"dispatchThrottlingRateInByte", bytes},
          {"relativeToPublishRate", false},
          {"ratePeriodInSecond", 1}};
}
Json topic_rate_default(const BrokerConfig& c) {
  return dispatch_rate_json(c.dispatch_throttling_rate_per_topic_in_msg,
                            c.dispatch_throttling_rate_per_topic_in_byte);
}
Json subscription_rate_default(const BrokerConfig& c) {
  return dispatch_rate_json(c.dispatch_throttling_rate_per_subscription_in_msg,
                            c.dispatch_throttling_rate_per_subscription_in_byte);
}
Json replicator_rate_default(const BrokerConfig& c) {
  return dispatch_rate_json(c.dispatch_throttling_rate_per_replicator_in_msg,
                            c.dispatch_throttling_rate_per_replicator_in_byte);
}
Json publish_rate_default(const BrokerConfig& c) {
  return {{"publishThrottlingRateInMsg", c.max_publish_rate_per_topic_in_messages},
          {"publishThrottlingRateInByte", c.max_publish_rate_per_topic_in_bytes}};
}
Json subscribe_rate_default(const BrokerConfig& c) {
  return {{"subscribeThrottlingRatePerConsumer", c.subscribe_throttling_rate_per_consumer},
          {"ratePeriodInSecond", c.subscribe_rate_period_per_consumer_in_second}};
}

Json ttl_default(const BrokerConfig& c) { return c.ttl_duration_default_in_seconds; }
Json dedup_default(const BrokerConfig& c) { return c.broker_deduplication_enabled; }
Json snapshot_interval_default(const BrokerConfig& c) {
  return c.broker_deduplication_snapshot_interval_seconds;
}
Json persistence_default(const BrokerConfig& c) {
  return {{"bookkeeperEnsemble", c.managed_ledger.ensemble_size},
          {"bookkeeperWriteQuorum", c.managed_ledger.write_quorum},
          {"bookkeeperAckQuorum", c.managed_ledger.ack_quorum},
          {"managedLedgerMaxMarkDeleteRate", c.managed_ledger.mark_delete_rate_limit}};
}
Json inactive_default(const BrokerConfig& c) {
  return {{"inactiveTopicDeleteMode", c.broker_delete_inactive_topics_mode},
          {"maxInactiveDurationSeconds", c.broker_delete_inactive_topics_max_inactive_seconds()},
          {"deleteWhileInactive", c.broker_delete_inactive_topics_enabled}};
}
Json max_producers_default(const BrokerConfig& c) { return c.max_producers_per_topic; }
Json delayed_delivery_default(const BrokerConfig& c) {
  return {{"tickTime", c.delayed_delivery_tick_time_millis},
          {"active", c.delayed_delivery_enabled},
          {"maxDeliveryDelayInMillis", c.delayed_delivery_max_delay_in_millis}};
}
Json compaction_threshold_default(const BrokerConfig& c) {
  return c.broker_service_compaction_threshold_in_bytes;
}
Json max_consumers_default(const BrokerConfig& c) { return c.max_consumers_per_topic; }
Json auto_update_default(const BrokerConfig& c) { return c.is_allow_auto_update_schema; }
Json validation_default(const BrokerConfig& c) { return c.is_schema_validation_enforced; }

constexpr PolicyField kFields[] = {
    {"messageTTL", "message_ttl_in_seconds", "messageTTL", "messageTTLInSeconds",
     Unset::kNoContent, parse_message_ttl, ttl_default, "messageTTL"},
    {"deduplication", "deduplicationEnabled", "deduplicationEnabled", "deduplicationEnabled",
     Unset::kNoContent, parse_boolean, dedup_default},
    {"deduplicationSnapshotInterval", "deduplicationSnapshotIntervalSeconds",
     "deduplicationSnapshotInterval", "deduplicationSnapshotIntervalSeconds", Unset::kNoContent,
     parse_snapshot_interval, snapshot_interval_default},
    {"persistence", "persistence", "persistence", "persistence", Unset::kNoContent,
     parse_persistence, persistence_default},
    {"inactiveTopicPolicies", "inactive_topic_policies", "inactiveTopicPolicies",
     "inactiveTopicPolicies", Unset::kNoContent, parse_inactive_topic_policies, inactive_default},
    {"maxProducersPerTopic", "max_producers_per_topic", "maxProducers", "maxProducerPerTopic",
     Unset::kNoContent, parse_max_producers, max_producers_default},
    {"maxConsumersPerTopic", "max_consumers_per_topic", "maxConsumers", "maxConsumerPerTopic",
     Unset::kNoContent, parse_max_consumers, max_consumers_default},
    {"isAllowAutoUpdateSchema", "is_allow_auto_update_schema", nullptr, nullptr,
     Unset::kBrokerSchemaAutoUpdate, parse_boolean, auto_update_default},
    {"schemaValidationEnforced", "schema_validation_enforced", "schemaValidationEnforced",
     "schemaValidationEnforced", Unset::kFalse, parse_boolean, validation_default},
    {"dispatchRate", "topicDispatchRate", "dispatchRate", "dispatchRate", Unset::kNoContent,
     parse_dispatch_rate, topic_rate_default, nullptr, true, "clusterDispatchRate",
     dispatch_rate_decides},
    {"subscriptionDispatchRate", "subscriptionDispatchRate", "subscriptionDispatchRate",
     "subscriptionDispatchRate", Unset::kNoContent, parse_dispatch_rate,
     subscription_rate_default, nullptr, true, nullptr, dispatch_rate_decides},
    {"replicatorDispatchRate", "replicatorDispatchRate", "replicatorDispatchRate",
     "replicatorDispatchRate", Unset::kNoContent, parse_dispatch_rate, replicator_rate_default,
     nullptr, true, nullptr, dispatch_rate_decides},
    {"publishRate", "publishMaxMessageRate", "publishRate", "publishRate", Unset::kNoContent,
     parse_publish_rate, publish_rate_default, nullptr, true, nullptr, publish_rate_decides},
    {"subscribeRate", "clusterSubscribeRate", "subscribeRate", "subscribeRate",
     Unset::kNoContent, parse_subscribe_rate, subscribe_rate_default, nullptr, true, nullptr,
     subscribe_rate_decides},
    {"compactionThreshold", "compaction_threshold", "compactionThreshold", "compactionThreshold",
     Unset::kNoContent, parse_compaction_threshold, compaction_threshold_default, nullptr, false,
     nullptr, nullptr, "PUT"},
    // (A topic keeps three fields, delayedDelivery{Enabled,TickTimeMillis,MaxDelayInMillis},
    // read by service/policies.cc; its route is not served yet.)
    {"delayedDelivery", "delayed_delivery_policies", nullptr, nullptr, Unset::kNoContent,
     parse_delayed_delivery, delayed_delivery_default},
};

}  // namespace

std::span<const PolicyField> policy_fields() { return kFields; }

const Json& namespace_value(const PolicyField& f, const Json& namespace_policies,
                            const std::string& cluster) {
  static const Json kNull;
  if (f.namespace_field == nullptr) return kNull;
  const Json& v = member(namespace_policies, f.namespace_field);
  if (!f.per_cluster) return v;
  const Json& mine = member(v, cluster.c_str());
  if (!mine.is_null() || f.namespace_also == nullptr) return mine;
  return member(member(namespace_policies, f.namespace_also), cluster.c_str());
}

Json applied_value(const PolicyField& f, const Json& local, const Json& global,
                   const Json& namespace_policies, const BrokerConfig& config) {
  auto decides = [&f](const Json& v) { return !v.is_null() && (!f.decides || f.decides(v)); };
  for (const Json* level : {&local, &global}) {
    if (const Json& v = member(*level, f.topic_field); decides(v)) return v;
  }
  if (const Json& v = namespace_value(f, namespace_policies, config.cluster_name); decides(v)) {
    return v;
  }
  return f.broker_default(config);
}

}  // namespace magnetar::broker::admin
