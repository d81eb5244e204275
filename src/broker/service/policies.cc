#include "broker/service/policies.h"

#include <nlohmann/json.hpp>

#include "broker/service/entry_metadata.h"
#include "broker/service/producer.h"
#include "broker/service/topic.h"

namespace magnetar::broker {

using mledger::Position;

TopicPolicies topic_policies(const BrokerConfig& config, std::string_view policies_json) {
  TopicPolicies p;
  p.ledger = config.managed_ledger;
  p.deduplication = config.broker_deduplication_enabled;
  p.message_ttl_seconds = config.ttl_duration_default_in_seconds;
  p.backlog_quota_bytes = config.backlog_quota_default_limit_bytes;
  p.backlog_quota_policy = config.backlog_quota_default_retention_policy;
  auto policies = nlohmann::json::parse(policies_json, nullptr, false);
  if (!policies.is_object()) return p;
  if (policies.contains("message_ttl_in_seconds") &&
      policies["message_ttl_in_seconds"].is_number_integer()) {
    p.message_ttl_seconds = policies["message_ttl_in_seconds"].get<int64_t>();
  }
  const auto& quotas = policies.value("backlog_quota_map", nlohmann::json());
  if (quotas.is_object() && quotas.contains("destination_storage") &&
      quotas["destination_storage"].is_object()) {
    const auto& q = quotas["destination_storage"];
    p.backlog_quota_bytes = q.value("limitSize", q.value("limit", p.backlog_quota_bytes));
    p.backlog_quota_policy = q.value("policy", p.backlog_quota_policy);
  }
  if (policies.contains("deduplicationEnabled") && policies["deduplicationEnabled"].is_boolean()) {
    p.deduplication = policies["deduplicationEnabled"].get<bool>();
  }
  const auto& clusters = policies.value("replication_clusters", nlohmann::json());
  if (clusters.is_array()) {
    for (const auto& c : clusters) {
      if (c.is_string()) p.replication_clusters.push_back(c.get<std::string>());
    }
  }
  const auto& retention = policies.value("retention_policies", nlohmann::json());
  if (retention.is_object()) {
    p.ledger.retention_time_minutes = retention.value("retentionTimeInMinutes", 0.0);
    p.ledger.retention_size_mb = retention.value("retentionSizeInMB", int64_t{0});
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
