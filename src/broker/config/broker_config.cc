#include "broker/config/broker_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "common/config.h"
#include "net/tls.h"

namespace magnetar::broker {

std::string BrokerConfig::service_url() const {
  return fmt::format("pulsar://{}:{}", advertised_address, broker_service_port);
}

std::string BrokerConfig::web_service_url() const {
  return fmt::format("http://{}:{}", advertised_address, web_service_port);
}

std::string BrokerConfig::service_url_tls() const {
  if (!broker_service_port_tls) return "";
  return fmt::format("pulsar+ssl://{}:{}", advertised_address, *broker_service_port_tls);
}

std::string BrokerConfig::web_service_url_tls() const {
  if (!web_service_port_tls) return "";
  return fmt::format("https://{}:{}", advertised_address, *web_service_port_tls);
}

bool BrokerConfig::is_proxy_role(std::string_view role) const {
  if (role.empty()) return false;
  return std::find(proxy_roles.begin(), proxy_roles.end(), role) != proxy_roles.end();
}

void bind_broker_config(ConfigSchema& s, BrokerConfig* c) {
  s.bind("clusterName", &c->cluster_name, "Name of the cluster this broker belongs to");
  s.bind("bindAddress", &c->bind_address, "Address the broker's listeners bind to");
  s.bind("advertisedAddress", &c->advertised_address,
         "Host name or IP clients are told to connect to");
  s.bind("brokerServicePort", &c->broker_service_port, "Pulsar binary protocol port")
      .range(0, 65535);
  s.bind("webServicePort", &c->web_service_port, "HTTP port (admin REST, lookup, /metrics)")
      .range(0, 65535);
  s.bind("brokerServicePortTls", &c->broker_service_port_tls,
         "Pulsar binary protocol over TLS (pulsar+ssl://); empty: no TLS listener")
      .range(0, 65535);
  s.bind("webServicePortTls", &c->web_service_port_tls,
         "HTTPS port (admin REST, lookup, /metrics); empty: none")
      .range(0, 65535);
  net::bind_tls_server_config(s, &c->tls, "broker");
  s.bind("numIOThreads", &c->num_io_threads,
         "Event loops serving connections and topics (0: one per core)")
      .range(0, 256);
  s.bind("maxMessageSize", &c->max_message_size, "Largest message a client may send (bytes)")
      .range(1024, 1 << 30);
  s.bind("keepAliveIntervalSeconds", &c->keep_alive_interval_seconds,
         "Idle time before the broker pings a client; twice that without an answer closes it")
      .range(1, 3600);
  s.bind("brokerShutdownTimeoutMs", &c->broker_shutdown_timeout_ms,
         "A stop (SIGTERM) that takes longer than this ends the process anyway, with exit "
         "code 1 (0: no limit)")
      .range(0, 86400000.0 * 365);
  s.bind("maxPendingPublishRequestsPerConnection", &c->max_pending_publish_requests_per_connection,
         "Sends awaiting storage per connection before the broker stops reading it")
      .range(1, 1000000);
  s.bind("allowAutoTopicCreation", &c->allow_auto_topic_creation,
         "Create topics on first use by a producer or consumer");
  s.bind("allowAutoTopicCreationType", &c->allow_auto_topic_creation_type,
         "non-partitioned or partitioned");
  s.bind("defaultNumPartitions", &c->default_num_partitions,
         "Partitions of an auto-created partitioned topic")
      .range(1, 100000);
  s.bind("brokerDeduplicationEnabled", &c->broker_deduplication_enabled,
         "Drop messages a producer resends (same producer name and sequence id)");
  s.bind("brokerDeduplicationEntriesInterval", &c->broker_deduplication_entries_interval,
         "Stored entries between two snapshots of the deduplication state")
      .range(1, 100000000);
  s.bind("brokerDeduplicationSnapshotIntervalSeconds",
         &c->broker_deduplication_snapshot_interval_seconds,
         "Seconds after which unsnapshotted deduplication state is snapshotted (0: never)")
      .range(0, 86400 * 365);
  s.bind("brokerDeleteInactiveTopicsEnabled", &c->broker_delete_inactive_topics_enabled,
         "Delete topics without producers, consumers (and, per the mode, subscriptions)");
  s.bind("brokerDeleteInactiveTopicsFrequencySeconds",
         &c->broker_delete_inactive_topics_frequency_seconds,
         "Period of the inactive topics check")
      .range(1, 86400 * 365);
  s.bind("brokerDeleteInactiveTopicsMode", &c->broker_delete_inactive_topics_mode,
         "delete_when_no_subscriptions or delete_when_subscriptions_caught_up");
  s.bind("brokerDeleteInactiveTopicsMaxInactiveDurationSeconds",
         &c->broker_delete_inactive_topics_max_inactive_duration_seconds,
         "Seconds a topic is inactive before it is deleted (-1: the check's frequency)")
      .range(-1, 86400 * 365 * 100.0);
  s.bind("maxProducersPerTopic", &c->max_producers_per_topic,
         "Producers a topic accepts (0: no limit)")
      .range(0, 1e9);
  s.bind("maxConsumersPerTopic", &c->max_consumers_per_topic,
         "Consumers a topic accepts (0: no limit)")
      .range(0, 1e9);
  s.bind("isAllowAutoUpdateSchema", &c->is_allow_auto_update_schema,
         "Producers may register new schema versions");
  s.bind("isSchemaValidationEnforced", &c->is_schema_validation_enforced,
         "Producers without a schema are refused on topics that have one");
  s.bind("topicLevelPoliciesEnabled", &c->topic_level_policies_enabled,
         "Serve the topic-level policies of the admin API");
  struct Rate {
    const char* key;
    int64_t* value;
    const char* help;
  };
  const Rate rates[] = {
      {"dispatchThrottlingRatePerTopicInMsg", &c->dispatch_throttling_rate_per_topic_in_msg,
       "Messages per second a topic dispatches to all its subscriptions (0: no limit)"},
      {"dispatchThrottlingRatePerTopicInByte", &c->dispatch_throttling_rate_per_topic_in_byte,
       "Bytes per second a topic dispatches to all its subscriptions (0: no limit)"},
      {"dispatchThrottlingRatePerSubscriptionInMsg",
       &c->dispatch_throttling_rate_per_subscription_in_msg,
       "Messages per second one subscription is dispatched (0: no limit)"},
      {"dispatchThrottlingRatePerSubscriptionInByte",
       &c->dispatch_throttling_rate_per_subscription_in_byte,
       "Bytes per second one subscription is dispatched (0: no limit)"},
      {"dispatchThrottlingRatePerReplicatorInMsg",
       &c->dispatch_throttling_rate_per_replicator_in_msg,
       "Messages per second one replicator sends to its remote cluster (0: no limit)"},
      {"dispatchThrottlingRatePerReplicatorInByte",
       &c->dispatch_throttling_rate_per_replicator_in_byte,
       "Bytes per second one replicator sends to its remote cluster (0: no limit)"},
      {"maxPublishRatePerTopicInMessages", &c->max_publish_rate_per_topic_in_messages,
       "Messages per second a topic accepts from its producers; past it their connections "
       "are read more slowly (0: no limit)"},
      {"maxPublishRatePerTopicInBytes", &c->max_publish_rate_per_topic_in_bytes,
       "Bytes per second a topic accepts from its producers (0: no limit)"},
  };
  for (const Rate& r : rates) s.bind(r.key, r.value, r.help).range(0, 1e15);
  s.bind("dispatchThrottlingOnBatchMessageEnabled",
         &c->dispatch_throttling_on_batch_message_enabled,
         "Dispatch rate limits count a batch as one message (else each message in it)");
  s.bind("subscribeThrottlingRatePerConsumer", &c->subscribe_throttling_rate_per_consumer,
         "Subscribes one consumer (host and name) may make per period (0: no limit)")
      .range(0, 1e9);
  s.bind("subscribeRatePeriodPerConsumerInSecond",
         &c->subscribe_rate_period_per_consumer_in_second,
         "Period of subscribeThrottlingRatePerConsumer (seconds)")
      .range(1, 86400 * 365);
  s.bind("replicationStartAt", &c->replication_start_at,
         "Where a replicator starts on an existing topic: latest (new messages only) or "
         "earliest (everything still stored)");
  s.bind("replicationProducerQueueSize", &c->replication_producer_queue_size,
         "Messages one replicator keeps in flight to its remote cluster")
      .range(1, 1000000);
  auth::bind_authentication_config(s, &c->authentication);
  s.bind("authenticationRefreshCheckSeconds", &c->authentication_refresh_check_seconds,
         "Period of the check that challenges connections whose credentials expired")
      .range(1, 86400);
  s.bind("authenticateMetricsEndpoint", &c->authenticate_metrics_endpoint,
         "/metrics needs authentication too");
  s.bind("authorizationEnabled", &c->authorization_enabled,
         "Check every operation against tenant admins and granted permissions");
  s.bind("authorizationProvider", &c->authorization_provider,
         "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider (the one supported)");
  s.bind("superUserRoles", &c->super_user_roles, "Roles that may do everything");
  s.bind("authorizationAllowWildcardsMatching", &c->authorization_allow_wildcards_matching,
         "Granted roles ending (starting) with * match by prefix (suffix)");
  s.bind("proxyRoles", &c->proxy_roles,
         "Roles of Pulsar proxies: they must name the client they connect for, and both roles "
         "are authorized");
  s.bind("authenticateOriginalAuthData", &c->authenticate_original_auth_data,
         "Authenticate the client credentials a proxy forwards instead of trusting the client "
         "role it names");
  s.bind("brokerClientAuthenticationPlugin", &c->broker_client_authentication_plugin,
         "Authentication of the broker's own clients (replicators, forwarded admin calls), e.g. "
         "org.apache.pulsar.client.impl.auth.AuthenticationToken");
  s.bind("brokerClientAuthenticationParameters", &c->broker_client_authentication_parameters,
         "Parameters of brokerClientAuthenticationPlugin, e.g. token:<jwt> or file:///path");
  s.bind("ttlDurationDefaultInSeconds", &c->ttl_duration_default_in_seconds,
         "Messages older than this are expired from subscriptions (0: never)")
      .range(0, 1 << 30);
  s.bind("messageExpiryCheckIntervalInMinutes", &c->message_expiry_check_interval_minutes,
         "Period of the message TTL check");
  s.bind("backlogQuotaCheckIntervalInSeconds", &c->backlog_quota_check_interval_seconds,
         "Period of the backlog quota check");
  s.bind("statsUpdateFrequencyInSecs", &c->stats_update_frequency_seconds,
         "Period over which the rates of topics stats and /metrics are computed")
      .range(0.01, 86400);
  s.bind("brokerServiceCompactionThresholdInBytes",
         &c->broker_service_compaction_threshold_in_bytes,
         "Backlog after a topic's compaction horizon that starts a compaction (0: never)")
      .range(0, INT64_MAX);
  s.bind("brokerServiceCompactionMonitorIntervalInSeconds",
         &c->broker_service_compaction_monitor_interval_seconds,
         "Period of the check of topics' backlogs against their compaction threshold")
      .range(0.01, 86400);
  s.bind("topicCompactionRetainNullKey", &c->topic_compaction_retain_null_key,
         "Whether compaction keeps messages without a key (Pulsar 3.2+ drops them: false)");
  s.bind("enableReplicatedSubscriptions", &c->enable_replicated_subscriptions,
         "Whether consumers may replicate their subscription's position to the peer clusters");
  s.bind("replicatedSubscriptionsSnapshotFrequencyMillis",
         &c->replicated_subscriptions_snapshot_frequency_ms,
         "Period of the snapshots that map positions between clusters")
      .range(10, 3600000);
  s.bind("replicatedSubscriptionsSnapshotTimeoutSeconds",
         &c->replicated_subscriptions_snapshot_timeout_seconds,
         "A snapshot whose peers have not all answered by then is abandoned")
      .range(1, 86400);
  s.bind("replicatedSubscriptionsSnapshotMaxCachedPerSubscription",
         &c->replicated_subscriptions_snapshot_max_cached,
         "Snapshots each replicated subscription keeps until its position passes them")
      .range(1, 100000);
  s.bind("backlogQuotaDefaultLimitBytes", &c->backlog_quota_default_limit_bytes,
         "Backlog a topic may keep before its quota policy applies (-1: no quota)");
  s.bind("backlogQuotaDefaultRetentionPolicy", &c->backlog_quota_default_retention_policy,
         "producer_request_hold, producer_exception or consumer_backlog_eviction");
  s.bind("maxUnackedMessagesPerConsumer", &c->max_unacked_messages_per_consumer,
         "Unacknowledged messages after which a Shared consumer gets no more (0: no limit)")
      .range(0, 100000000);
  s.bind("delayedDeliveryEnabled", &c->delayed_delivery_enabled,
         "Messages with a delivery time wait for it on Shared and Key_Shared subscriptions "
         "(false: delivered at once)");
  s.bind("delayedDeliveryTickTimeMillis", &c->delayed_delivery_tick_time_millis,
         "Precision of delayed delivery: the least time between two wake-ups of a "
         "subscription's tracker (ms)")
      .range(1, 86400000);
  s.bind("delayedDeliveryMaxDelayInMillis", &c->delayed_delivery_max_delay_in_millis,
         "Longest delivery delay a producer may ask for; longer ones are refused (ms, 0: no "
         "limit)")
      .range(0, INT64_MAX);
  s.bind("isDelayedDeliveryDeliverAtTimeStrict", &c->is_delayed_delivery_deliver_at_time_strict,
         "Never deliver a delayed message before its time (false: up to a tick early)");
  s.bind("delayedDeliveryFixedDelayDetectionLookahead",
         &c->delayed_delivery_fixed_delay_detection_lookahead,
         "Held messages, all with delays in publish order, after which a subscription reads "
         "no further until the first is due (0: never)")
      .range(0, INT64_MAX);
  s.bind("defaultNumberOfNamespaceBundles", &c->default_number_of_namespace_bundles,
         "Bundles of a namespace created without a bundles policy")
      .range(1, 4096);
  s.bind("loadBalancerEnabled", &c->load_balancer_enabled,
         "Place unowned bundles on the least-loaded broker (false: the broker looked up takes "
         "them)");
  s.bind("loadBalancerReportUpdateMinIntervalMillis",
         &c->load_balancer_report_update_min_interval_millis,
         "Shortest time between two load reports of a broker")
      .range(100, 3600000);
  s.bind("loadBalancerReportUpdateMaxIntervalMinutes",
         &c->load_balancer_report_update_max_interval_minutes,
         "Longest time between two load reports of a broker");
  s.bind("loadBalancerReportUpdateThresholdPercentage",
         &c->load_balancer_report_update_threshold_percentage,
         "Change of load (percent) that makes a broker write a new report");
  s.bind("loadBalancerBrokerOverloadedThresholdPercentage",
         &c->load_balancer_broker_overloaded_threshold_percentage,
         "CPU or memory usage (percent) above which a broker gets new bundles only when all "
         "are above it");
  s.bind("loadBalancerAutoBundleSplitEnabled", &c->load_balancer_auto_bundle_split_enabled,
         "Split a bundle of this broker that passes one of the loadBalancerNamespaceBundleMax* "
         "thresholds");
  s.bind("loadBalancerAutoUnloadSplitBundlesEnabled",
         &c->load_balancer_auto_unload_split_bundles_enabled,
         "Unload both halves of an automatically split bundle (so they may move)");
  s.bind("loadBalancerNamespaceMaximumBundles", &c->load_balancer_namespace_maximum_bundles,
         "No automatic split in a namespace that has this many bundles")
      .range(1, 4096);
  s.bind("loadBalancerNamespaceBundleMaxTopics", &c->load_balancer_namespace_bundle_max_topics,
         "Topics in a bundle above which it is split");
  s.bind("loadBalancerNamespaceBundleMaxSessions", &c->load_balancer_namespace_bundle_max_sessions,
         "Producers + consumers in a bundle above which it is split");
  s.bind("loadBalancerNamespaceBundleMaxMsgRate", &c->load_balancer_namespace_bundle_max_msg_rate,
         "Messages per second (in + out) in a bundle above which it is split");
  s.bind("loadBalancerNamespaceBundleMaxBandwidthMbytes",
         &c->load_balancer_namespace_bundle_max_bandwidth_mbytes,
         "Throughput (MB/s, in + out) in a bundle above which it is split");
  s.bind("bookkeeperClientRackawarePolicyEnabled", &c->bookkeeper_client_rackaware_policy_enabled,
         "Place ledgers so that each write set spans several racks (racks from /bookies)");
  s.bind("bookkeeperClientRegionawarePolicyEnabled",
         &c->bookkeeper_client_regionaware_policy_enabled,
         "Place ledgers across regions (racks /region/rack in /bookies; the repp* keys); "
         "wins over the rack-aware policy");
  s.bind("bookkeeperClientMinNumRacksPerWriteQuorum",
         &c->bookkeeper_client_min_num_racks_per_write_quorum,
         "Racks each write set should span (rack-aware policy)")
      .range(1, 1000);
  s.bind("bookkeeperClientEnforceMinNumRacksPerWriteQuorum",
         &c->bookkeeper_client_enforce_min_num_racks_per_write_quorum,
         "Fail a ledger's creation when its write sets cannot span that many racks (else "
         "place with fewer)");
  s.bind("reppRegionsToWrite", &c->repp_regions_to_write,
         "Region-aware policy: the regions ledgers are written to, separated by ';' (empty: "
         "every region of /bookies)");
  s.bind("reppMinimumRegionsForDurability", &c->repp_minimum_regions_for_durability,
         "Region-aware policy: regions every acknowledged entry is stored in (each ack quorum "
         "spans that many; 0 or 1: no constraint)")
      .range(0, 1000);
  s.bind("reppEnableValidation", &c->repp_enable_validation,
         "Region-aware policy: fail a ledger's creation when no ensemble meets "
         "reppMinimumRegionsForDurability (false: place anyway, best effort)");
  s.bind("reppEnableDurabilityEnforcementInReplace",
         &c->repp_enable_durability_enforcement_in_replace,
         "Region-aware policy: a failed bookie is only replaced by one that keeps "
         "reppMinimumRegionsForDurability");
  s.bind("bookkeeper_enforceMinNumFaultDomainsForWrite",
         &c->enforce_min_num_fault_domains_for_write,
         "Region-aware policy: an add completes only once the bookies that stored it span "
         "reppMinimumRegionsForDurability regions, so ensembles may put two copies in one "
         "region when a region is lost (BookKeeper's default: false)");
  s.bind("bookkeeperClientBookieAddressOverrides", &c->bookie_address_overrides,
         "Bookies to reach at another address than their id, as id=address:port pairs "
         "separated by ',' (a relay or a NAT; the stretched local cluster's links between "
         "regions)");
  metadata::bind_metadata_config(s, &c->metadata);
  mledger::bind_managed_ledger_config(s, &c->managed_ledger, &c->managed_ledger_factory);
  // Pulsar's broker.conf and standalone.conf as they ship: every key accepted (those not
  // bound above are listed in a warning), its deprecated ZooKeeper names understood.
  s.accept_foreign(pulsar_broker_keys());
  s.accept_foreign_prefix("bookkeeper_");
  s.accept_foreign_prefix("brokerClient_");
  metadata::add_zookeeper_aliases(s);
}

}  // namespace magnetar::broker
