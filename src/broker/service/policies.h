#pragma once
// The namespace policies that shape a topic (Pulsar's Policies JSON, as the admin REST API
// stores it at /admin/policies/<tenant>/<ns>), with the broker's configured defaults, and
// the two that run periodically: message expiry (TTL) and backlog quotas.
//
// A policy change reaches loaded topics through the registry's watch (topic_registry.h).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/broker_config.h"
#include "common/asio.h"

namespace magnetar::broker {

class PersistentTopic;

struct TopicPolicies {
  int64_t message_ttl_seconds = 0;   // 0: none
  int64_t backlog_quota_bytes = -1;  // -1: none
  std::string backlog_quota_policy = "producer_request_hold";
  bool deduplication = false;
  mledger::ManagedLedgerConfig ledger;            // with the namespace's retention
  std::vector<std::string> replication_clusters;  // the namespace's, the local one included
};

// `policies_json`: the namespace's Policies node; fields absent or malformed keep the
// defaults of `config`.
TopicPolicies topic_policies(const BrokerConfig& config, std::string_view policies_json);

// On the topic's loop. Moves subscriptions past messages older than the topic's TTL.
Task<void> expire_messages(PersistentTopic& topic);
// Moves one subscription (or every one, when `only` is empty) past the messages published
// more than `seconds` ago; returns how many subscriptions moved.
Task<int> expire_messages(PersistentTopic& topic, int64_t seconds, std::string only);
bool backlog_quota_exceeded(PersistentTopic& topic);
// Applies the quota policy when the backlog is over it: producer_request_hold and
// producer_exception disconnect the producers (add_producer refuses them while over it),
// consumer_backlog_eviction moves the slowest durable subscriptions forward.
Task<void> enforce_backlog_quota(PersistentTopic& topic);

}  // namespace magnetar::broker
