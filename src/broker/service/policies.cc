#include "broker/service/policies.h"

#include <nlohmann/json.hpp>

#include <cstdint>

#include "broker/service/entry_metadata.h"
#include "broker/service/producer.h"
#include "broker/service/topic.h"

namespace magnetar::broker {

using mledger::Position;

namespace {

using Json = nlohmann::json;

// Where one level keeps each policy: Pulsar's Policies and TopicPolicies name them apart.
struct FieldNames {
  const char* ttl;
  const char* retention;
  const char* quotas;
  const char* dedup;
  const char* dedup_interval;
  const char* persistence;
  const char* inactive;
  const char* max_producers;
  const char* max_consumers;
  const char* auto_update;  // nullptr: not a topic policy
  const char* validation;
  // The rate limits; `per_cluster`: each a map of cluster name to value (a namespace's).
  const char* dispatch_rate;
  const char* subscription_dispatch_rate;
  const char* replicator_dispatch_rate;
  const char* publish_rate;
  const char* subscribe_rate;
  bool per_cluster;
  const char* compaction_threshold;
  // Delayed delivery: a namespace keeps one object (DelayedDeliveryPolicies), a topic three
  // fields.
  const char* delayed_delivery;
  const char* delayed_enabled;
  const char* delayed_tick;
  const char* delayed_max;
};

constexpr FieldNames kNamespaceFields{
    "message_ttl_in_seconds",  "retention_policies",   "backlog_quota_map",
    "deduplicationEnabled",    "deduplicationSnapshotIntervalSeconds", "persistence",
    "inactive_topic_policies", "max_producers_per_topic", "max_consumers_per_topic",
    "is_allow_auto_update_schema", "schema_validation_enforced",
    "topicDispatchRate",       "subscriptionDispatchRate", "replicatorDispatchRate",
    "publishMaxMessageRate",   "clusterSubscribeRate",    true,
    "compaction_threshold",    "delayed_delivery_policies", nullptr,
    nullptr,                   nullptr};
constexpr FieldNames kTopicFields{
    "messageTTLInSeconds",   "retentionPolicies",   "backLogQuotaMap",
    "deduplicationEnabled",  "deduplicationSnapshotIntervalSeconds", "persistence",
    "inactiveTopicPolicies", "maxProducerPerTopic", "maxConsumerPerTopic",
    nullptr,                 "schemaValidationEnforced",
    "dispatchRate",          "subscriptionDispatchRate", "replicatorDispatchRate",
    "publishRate",           "subscribeRate",            false,
    "compactionThreshold",   nullptr,                    "delayedDeliveryEnabled",
    "delayedDeliveryTickTimeMillis", "delayedDeliveryMaxDelayInMillis"};

const Json* field(const Json& obj, const char* name) {
  if (name == nullptr) return nullptr;
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

void set_int(const Json& obj, const char* name, int64_t& out) {
  if (const Json* v = field(obj, name); v && v->is_number_integer()) out = v->get<int64_t>();
}

void set_int(const Json& obj, const char* name, int32_t& out) {
  if (const Json* v = field(obj, name); v && v->is_number_integer()) {
    const auto n = v->get<int64_t>();
    if (n >= 0 && n <= INT32_MAX) out = static_cast<int32_t>(n);
  }
}

void set_bool(const Json& obj, const char* name, bool& out) {
  if (const Json* v = field(obj, name); v && v->is_boolean()) out = v->get<bool>();
}

// A rate-limit field of a level: its value, or in a namespace's its cluster's entry.
const Json* rate_field(const Json& level, const char* name, const FieldNames& names,
                       const std::string& cluster) {
  const Json* v = field(level, name);
  if (v && names.per_cluster) v = v->is_object() ? field(*v, cluster.c_str()) : nullptr;
  return v && v->is_object() ? v : nullptr;
}

// Pulsar's DispatchRate (`messages_key`/`bytes_key`: PublishRate's names): replaces `out`
// only when it enables a rate.
void set_rate(const Json* v, RateLimit& out, const char* messages_key = "dispatchThrottlingRateInMsg",
              const char* bytes_key = "dispatchThrottlingRateInByte") {
  if (v == nullptr) return;
  RateLimit r;
  r.messages = -1;
  r.bytes = -1;
  set_int(*v, messages_key, r.messages);
  set_int(*v, bytes_key, r.bytes);
  set_int(*v, "ratePeriodInSecond", r.period_seconds);
  set_bool(*v, "relativeToPublishRate", r.relative_to_publish_rate);
  if (r.enabled()) out = r;
}

void set_subscribe_rate(const Json* v, SubscribeRate& out) {
  if (v == nullptr) return;
  SubscribeRate r{-1, 30};
  set_int(*v, "subscribeThrottlingRatePerConsumer", r.per_consumer);
  set_int(*v, "ratePeriodInSecond", r.period_seconds);
  if (r.enabled()) out = r;
}

// Overrides what `level` (one Policies or TopicPolicies node) sets.
void overlay(TopicPolicies& p, const Json& level, const FieldNames& names,
             const std::string& cluster) {
  if (!level.is_object()) return;
  set_rate(rate_field(level, names.dispatch_rate, names, cluster), p.dispatch_rate);
  if (names.per_cluster) {  // the deprecated field Pulsar still writes beside it
    if (const Json* old = rate_field(level, "clusterDispatchRate", names, cluster);
        old && !rate_field(level, names.dispatch_rate, names, cluster)) {
      set_rate(old, p.dispatch_rate);
    }
  }
  set_rate(rate_field(level, names.subscription_dispatch_rate, names, cluster),
           p.subscription_dispatch_rate);
  set_rate(rate_field(level, names.replicator_dispatch_rate, names, cluster),
           p.replicator_dispatch_rate);
  set_rate(rate_field(level, names.publish_rate, names, cluster), p.publish_rate,
           "publishThrottlingRateInMsg", "publishThrottlingRateInByte");
  set_subscribe_rate(rate_field(level, names.subscribe_rate, names, cluster), p.subscribe_rate);
  set_int(level, names.ttl, p.message_ttl_seconds);
  if (const Json* quotas = field(level, names.quotas); quotas && quotas->is_object()) {
    if (const Json* q = field(*quotas, "destination_storage"); q && q->is_object()) {
      p.backlog_quota_bytes = q->value("limitSize", q->value("limit", p.backlog_quota_bytes));
      p.backlog_quota_policy = q->value("policy", p.backlog_quota_policy);
    }
  }
  set_bool(level, names.dedup, p.deduplication);
  set_int(level, names.dedup_interval, p.dedup_snapshot_interval_seconds);
  if (const Json* r = field(level, names.retention); r && r->is_object()) {
    p.ledger.retention_time_minutes = r->value("retentionTimeInMinutes", 0.0);
    p.ledger.retention_size_mb = r->value("retentionSizeInMB", int64_t{0});
  }
  if (const Json* q = field(level, names.persistence); q && q->is_object()) {
    set_int(*q, "bookkeeperEnsemble", p.ledger.ensemble_size);
    set_int(*q, "bookkeeperWriteQuorum", p.ledger.write_quorum);
    set_int(*q, "bookkeeperAckQuorum", p.ledger.ack_quorum);
    if (const Json* rate = field(*q, "managedLedgerMaxMarkDeleteRate"); rate && rate->is_number()) {
      p.ledger.mark_delete_rate_limit = rate->get<double>();
    }
  }
  if (const Json* i = field(level, names.inactive); i && i->is_object()) {
    set_bool(*i, "deleteWhileInactive", p.inactive.delete_while_inactive);
    set_int(*i, "maxInactiveDurationSeconds", p.inactive.max_inactive_seconds);
    if (const Json* mode = field(*i, "inactiveTopicDeleteMode"); mode && mode->is_string()) {
      p.inactive.mode = mode->get<std::string>();
    }
  }
  set_int(level, names.max_producers, p.max_producers);
  set_int(level, names.max_consumers, p.max_consumers);
  set_int(level, names.compaction_threshold, p.compaction_threshold_bytes);
  set_bool(level, names.auto_update, p.schema_auto_update);
  set_bool(level, names.validation, p.schema_validation_enforced);
  if (const Json* d = field(level, names.delayed_delivery); d && d->is_object()) {
    set_bool(*d, "active", p.delayed_delivery.enabled);
    set_int(*d, "tickTime", p.delayed_delivery.tick_ms);
    set_int(*d, "maxDeliveryDelayInMillis", p.delayed_delivery.max_delay_ms);
  }
  set_bool(level, names.delayed_enabled, p.delayed_delivery.enabled);
  set_int(level, names.delayed_tick, p.delayed_delivery.tick_ms);
  set_int(level, names.delayed_max, p.delayed_delivery.max_delay_ms);
}

}  // namespace

TopicPolicies topic_policies(const BrokerConfig& config, std::string_view namespace_json,
                             std::string_view global_topic_json,
                             std::string_view local_topic_json) {
  TopicPolicies p;
  p.ledger = config.managed_ledger;
  p.deduplication = config.broker_deduplication_enabled;
  p.dedup_snapshot_interval_seconds = config.broker_deduplication_snapshot_interval_seconds;
  p.message_ttl_seconds = config.ttl_duration_default_in_seconds;
  p.backlog_quota_bytes = config.backlog_quota_default_limit_bytes;
  p.backlog_quota_policy = config.backlog_quota_default_retention_policy;
  p.inactive.delete_while_inactive = config.broker_delete_inactive_topics_enabled;
  p.inactive.max_inactive_seconds = config.broker_delete_inactive_topics_max_inactive_seconds();
  p.inactive.mode = config.broker_delete_inactive_topics_mode;
  p.max_producers = config.max_producers_per_topic;
  p.max_consumers = config.max_consumers_per_topic;
  p.compaction_threshold_bytes = config.broker_service_compaction_threshold_in_bytes;
  p.schema_auto_update = config.is_allow_auto_update_schema;
  p.schema_validation_enforced = config.is_schema_validation_enforced;
  p.delayed_delivery = {config.delayed_delivery_enabled, config.delayed_delivery_tick_time_millis,
                        config.delayed_delivery_max_delay_in_millis};
  p.dispatch_rate = {config.dispatch_throttling_rate_per_topic_in_msg,
                     config.dispatch_throttling_rate_per_topic_in_byte};
  p.subscription_dispatch_rate = {config.dispatch_throttling_rate_per_subscription_in_msg,
                                  config.dispatch_throttling_rate_per_subscription_in_byte};
  p.replicator_dispatch_rate = {config.dispatch_throttling_rate_per_replicator_in_msg,
                                config.dispatch_throttling_rate_per_replicator_in_byte};
  p.publish_rate = {config.max_publish_rate_per_topic_in_messages,
                    config.max_publish_rate_per_topic_in_bytes};
  p.subscribe_rate = {config.subscribe_throttling_rate_per_consumer,
                      config.subscribe_rate_period_per_consumer_in_second};
  const Json ns = Json::parse(namespace_json, nullptr, false);
  overlay(p, ns, kNamespaceFields, config.cluster_name);
  if (const Json* clusters = ns.is_object() ? field(ns, "replication_clusters") : nullptr;
      clusters && clusters->is_array()) {
    for (const auto& c : *clusters) {
      if (c.is_string()) p.replication_clusters.push_back(c.get<std::string>());
    }
  }
  for (std::string_view topic_json : {global_topic_json, local_topic_json}) {
    if (topic_json.empty()) continue;
    overlay(p, Json::parse(topic_json, nullptr, false), kTopicFields, config.cluster_name);
  }
  return p;
}

Task<void> expire_messages(PersistentTopic& topic) {
  const int64_t ttl = topic.policies().message_ttl_seconds;
  if (ttl <= 0) co_return;
  (void)co_await expire_messages(topic, ttl, {});
}

Task<int> expire_messages(PersistentTopic& topic, int64_t seconds, std::string only) {
  auto keep = topic.shared_from_this();
  // Published before now - seconds (nothing at all when that is before the epoch).
  const int64_t now = wall_clock_ms();
  const auto cutoff = static_cast<uint64_t>(seconds >= now / 1000 ? 0 : now - seconds * 1000);
  auto older = [cutoff](const mledger::Entry& e) { return published_before(e, cutoff); };
  auto& ml = topic.ledger();
  int moved = 0;
  auto subs = topic.subscriptions();  // a copy: the map may change while this waits
  for (auto& [name, sub] : subs) {
    if (!only.empty() && name != only) continue;
    auto& cursor = sub->cursor();
    const Position from = ml.next_position(cursor.mark_delete_position());
    if (from > ml.last_confirmed()) continue;
    auto found = co_await ml.find_newest_matching(from, older);
    if (!found.ok() || !found->has_value()) continue;
    Status st = co_await cursor.mark_delete(**found);
    if (st.ok()) {
      ++moved;
      log::Logger("broker")
          .with("topic", topic.name().to_string())
          .info("subscription {}: expired messages up to {}", name, (*found)->to_string());
    }
  }
  co_return moved;
}

bool inactive_topic_to_delete(PersistentTopic& topic, std::chrono::steady_clock::time_point now) {
  const InactiveTopicPolicy& policy = topic.policies().inactive;
  bool in_use = topic.has_clients() || topic.has_replicators();
  for (const auto& [name, sub] : topic.subscriptions()) {
    if (in_use) break;
    in_use = policy.mode != "delete_when_subscriptions_caught_up" ||
             sub->cursor().backlog_entries() > 0;
  }
  if (in_use) {
    topic.mark_active(now);
    return false;
  }
  if (!policy.delete_while_inactive) return false;
  const auto idle = now - topic.last_active();
  if (idle < std::chrono::seconds(policy.max_inactive_seconds)) return false;
  // Retention keeps the topic (its data) as long as it keeps data.
  const mledger::Millis retention = topic.ledger().config().retention_time();
  return retention.count() >= 0 && idle >= retention;
}

bool backlog_quota_exceeded(PersistentTopic& topic) {
  return topic.ledger().backlog_quota_exceeded(topic.policies().backlog_quota_bytes);
}

Task<void> enforce_backlog_quota(PersistentTopic& topic) {
  auto keep = topic.shared_from_this();
  if (!backlog_quota_exceeded(topic)) co_return;
  log::Logger log = log::Logger("broker").with("topic", topic.name().to_string());
  const auto& policy = topic.policies().backlog_quota_policy;
  if (policy == "producer_exception" || policy == "producer_request_hold") {
    // Both disconnect the producers (as Pulsar does); their reconnection is refused while the
    // quota is exceeded — with a retriable error under producer_request_hold, so clients hold
    // their messages and retry, and a final one under producer_exception.
    log.warn("backlog quota exceeded: disconnecting producers");
    topic.disconnect_producers();
    co_return;
  }
  if (policy != "consumer_backlog_eviction") co_return;
  // The slowest durable subscriptions skip their oldest entries until under the quota.
  auto& ml = topic.ledger();
  for (int round = 0; round < 100 && backlog_quota_exceeded(topic); ++round) {
    std::shared_ptr<Subscription> slowest;
    for (const auto& [name, sub] : topic.subscriptions()) {
      if (!sub->durable()) continue;
      if (!slowest ||
          sub->cursor().mark_delete_position() < slowest->cursor().mark_delete_position()) {
        slowest = sub;
      }
    }
    if (!slowest) break;
    const int64_t entries = std::max<int64_t>(1, ml.number_of_entries());
    const int64_t average = std::max<int64_t>(1, ml.total_size() / entries);
    const int64_t over = ml.estimated_backlog_size() - topic.policies().backlog_quota_bytes;
    const int64_t skip = std::max<int64_t>(1, over / average + 1);
    Status st = co_await slowest->cursor().skip_entries(skip);
    if (!st.ok()) break;
    log.warn("backlog quota exceeded: subscription {} skipped {} entries", slowest->name(), skip);
  }
}

}  // namespace magnetar::broker
