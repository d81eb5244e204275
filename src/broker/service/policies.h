#pragma once
// The policies that shape a topic, and the two that run periodically: message expiry (TTL)
// and backlog quotas. A topic's value of each policy is, field by field, the first set of:
// its local topic policies (this cluster's, Pulsar's TopicPolicies JSON), its global ones
// (the configuration store's), its namespace's (Pulsar's Policies JSON, as the admin REST
// API stores it at /admin/policies/<tenant>/<ns>), the broker's configuration.
//
// A policy change reaches loaded topics through the registry's watch (topic_registry.h).

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/service/delayed_delivery.h"
#include "broker/service/dispatch_rate.h"
#include "common/asio.h"

namespace magnetar::broker {

class PersistentTopic;

// Pulsar's InactiveTopicPolicies: a topic nobody uses for `max_inactive_seconds` is deleted
// when `delete_while_inactive` (mode delete_when_no_subscriptions: only one without
// subscriptions; delete_when_subscriptions_caught_up: also one whose subscriptions have no
// backlog, deleting them).
struct InactiveTopicPolicy {
  bool delete_while_inactive = true;
  int64_t max_inactive_seconds = 60;
  std::string mode = "delete_when_no_subscriptions";
};

struct TopicPolicies {
  int64_t message_ttl_seconds = 0;   // 0: none
  int64_t backlog_quota_bytes = -1;  // -1: none
  std::string backlog_quota_policy = "producer_request_hold";
  bool deduplication = false;
  int64_t dedup_snapshot_interval_seconds = 120;  // 0: by entries only
  mledger::ManagedLedgerConfig ledger;  // with the retention and persistence policies
  std::vector<std::string> replication_clusters;  // the namespace's, the local one included
  InactiveTopicPolicy inactive;
  int32_t max_producers = 0;  // per topic; 0: no limit
  int32_t max_consumers = 0;  // per topic; 0: no limit
  bool schema_auto_update = true;           // producers may add schema versions
  bool schema_validation_enforced = false;  // producers without a schema are refused
  // Rate limits (dispatch_rate.h). A level counts only when it enables a rate (Pulsar's
  // normalize()); a namespace keeps each per cluster (Pulsar's maps keyed by cluster name).
  RateLimit dispatch_rate;               // of the topic, shared by its subscriptions
  RateLimit subscription_dispatch_rate;  // of each subscription
  RateLimit replicator_dispatch_rate;    // of each replicator
  RateLimit publish_rate;                // of the topic's producers together, per second
  SubscribeRate subscribe_rate;          // per consumer
  // Backlog after the compaction horizon that starts a compaction, bytes (0: never).
  int64_t compaction_threshold_bytes = 0;
  // Delayed delivery: the namespace's delayed_delivery_policies, a topic's
  // delayedDelivery{Enabled,TickTimeMillis,MaxDelayInMillis}.
  DelayedDeliveryPolicy delayed_delivery;
};

// `namespace_json`: the namespace's Policies node; `global_topic_json`, `local_topic_json`:
// the topic's TopicPolicies nodes (empty: none). Fields absent or malformed are not set.
TopicPolicies topic_policies(const BrokerConfig& config, std::string_view namespace_json,
                             std::string_view global_topic_json = {},
                             std::string_view local_topic_json = {});

// On the topic's loop. Moves subscriptions past messages older than the topic's TTL.
Task<void> expire_messages(PersistentTopic& topic);
// Moves one subscription (or every one, when `only` is empty) past the messages published
// more than `seconds` ago; returns how many subscriptions moved.
Task<int> expire_messages(PersistentTopic& topic, int64_t seconds, std::string only);
bool backlog_quota_exceeded(PersistentTopic& topic);
// Whether the inactive topic policy deletes the topic now: nobody has used it (producers,
// consumers, and per the mode subscriptions or their backlog; replicators reading it) for
// its max inactive duration, and retention does not keep it. Marks it active when in use.
bool inactive_topic_to_delete(PersistentTopic& topic, std::chrono::steady_clock::time_point now);
// Applies the quota policy when the backlog is over it: producer_request_hold and
// producer_exception disconnect the producers (add_producer refuses them while over it),
// consumer_backlog_eviction moves the slowest durable subscriptions forward.
Task<void> enforce_backlog_quota(PersistentTopic& topic);

}  // namespace magnetar::broker
