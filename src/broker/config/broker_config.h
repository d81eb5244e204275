#pragma once
// The broker's settings, with Pulsar's broker.conf key names (bind_broker_config).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auth/authentication.h"
#include "metadata/metadata_store.h"
#include "net/tls_config.h"
#include "mledger/config.h"

namespace magnetar::protocol {
class LocalBookie;
}

namespace magnetar {
class ConfigSchema;
}
namespace magnetar::net {
struct TlsOptions;
}

namespace magnetar::broker {

struct BrokerConfig {
  std::string cluster_name = "standalone";       // clusterName
  std::string bind_address = "0.0.0.0";          // bindAddress
  std::string advertised_address = "127.0.0.1";  // advertisedAddress
  int32_t broker_service_port = 6650;            // brokerServicePort
  int32_t web_service_port = 8080;               // webServicePort
  // TLS listeners: unset = none; 0 picks a free port (tests).
  std::optional<int32_t> broker_service_port_tls;  // brokerServicePortTls
  std::optional<int32_t> web_service_port_tls;     // webServicePortTls
  // tlsCertificateFilePath, tlsKeyFilePath, tlsTrustCertsFilePath, ... (net/tls_config.h).
  net::TlsServerConfig tls;
  int32_t num_io_threads = 0;                    // numIOThreads: event loops (0: one per core)
  int32_t max_message_size = 5 * 1024 * 1024;    // maxMessageSize
  int32_t keep_alive_interval_seconds = 30;      // keepAliveIntervalSeconds
  // brokerShutdownTimeoutMs: a stop that takes longer ends the process anyway (0: no limit)
  int64_t broker_shutdown_timeout_ms = 60000;
  int32_t max_pending_publish_requests_per_connection = 1000;
  // maxPendingPublishRequestsPerConnection: past it, the connection stops being read.
  bool allow_auto_topic_creation = true;                           // allowAutoTopicCreation
  std::string allow_auto_topic_creation_type = "non-partitioned";  // allowAutoTopicCreationType
  int32_t default_num_partitions = 1;                              // defaultNumPartitions
  bool broker_deduplication_enabled = false;                       // brokerDeduplicationEnabled
  int32_t broker_deduplication_entries_interval = 1000;  // brokerDeduplicationEntriesInterval
  int32_t broker_deduplication_snapshot_interval_seconds = 120;
  // brokerDeduplicationSnapshotIntervalSeconds (0: snapshots by entries only)
  // Topics nobody uses are deleted (policies.h InactiveTopicPolicy), checked every
  // brokerDeleteInactiveTopicsFrequencySeconds.
  bool broker_delete_inactive_topics_enabled = true;  // brokerDeleteInactiveTopicsEnabled
  int32_t broker_delete_inactive_topics_frequency_seconds = 60;
  std::string broker_delete_inactive_topics_mode = "delete_when_no_subscriptions";
  // brokerDeleteInactiveTopicsMaxInactiveDurationSeconds (-1: unset, the frequency)
  int32_t broker_delete_inactive_topics_max_inactive_duration_seconds = -1;
  int64_t broker_delete_inactive_topics_max_inactive_seconds() const {
    return broker_delete_inactive_topics_max_inactive_duration_seconds >= 0
               ? broker_delete_inactive_topics_max_inactive_duration_seconds
               : broker_delete_inactive_topics_frequency_seconds;
  }
  int32_t max_producers_per_topic = 0;           // maxProducersPerTopic (0: no limit)
  int32_t max_consumers_per_topic = 0;           // maxConsumersPerTopic (0: no limit)
  bool is_allow_auto_update_schema = true;       // isAllowAutoUpdateSchema
  bool is_schema_validation_enforced = false;    // isSchemaValidationEnforced
  bool topic_level_policies_enabled = true;      // topicLevelPoliciesEnabled
  // Rate limits when no topic or namespace policy sets one (0: none; service/dispatch_rate.h).
  int64_t dispatch_throttling_rate_per_topic_in_msg = 0;    // ...PerTopicInMsg
  int64_t dispatch_throttling_rate_per_topic_in_byte = 0;   // ...PerTopicInByte
  int64_t dispatch_throttling_rate_per_subscription_in_msg = 0;   // ...PerSubscriptionInMsg
  int64_t dispatch_throttling_rate_per_subscription_in_byte = 0;  // ...PerSubscriptionInByte
  int64_t dispatch_throttling_rate_per_replicator_in_msg = 0;     // ...PerReplicatorInMsg
  int64_t dispatch_throttling_rate_per_replicator_in_byte = 0;    // ...PerReplicatorInByte
  // dispatchThrottlingOnBatchMessageEnabled: a batch counts as one message
  bool dispatch_throttling_on_batch_message_enabled = false;
  int64_t max_publish_rate_per_topic_in_messages = 0;  // maxPublishRatePerTopicInMessages
  int64_t max_publish_rate_per_topic_in_bytes = 0;     // maxPublishRatePerTopicInBytes
  int32_t subscribe_throttling_rate_per_consumer = 0;  // subscribeThrottlingRatePerConsumer
  int32_t subscribe_rate_period_per_consumer_in_second = 30;  // ...PeriodPerConsumerInSecond
  // Geo-replication (src/broker/replication): where a new replicator's cursor starts on a
  // topic that existed before replication to that cluster was enabled, and how many sends
  // one replicator keeps in flight.
  std::string replication_start_at = "latest";     // replicationStartAt: latest | earliest
  int32_t replication_producer_queue_size = 1000;  // replicationProducerQueueSize
  // Authentication (../shared/reference/pulsar-security-proxy.md §1-3).
  // authenticationEnabled, authenticationProviders, anonymousUserRole, token*.
  auth::AuthenticationSettings authentication;
  int32_t authentication_refresh_check_seconds = 60;  // authenticationRefreshCheckSeconds
  bool authenticate_metrics_endpoint = false;         // authenticateMetricsEndpoint
  // Authorization (§5): who may do what, from tenant adminRoles and namespace auth_policies.
  bool authorization_enabled = false;   // authorizationEnabled
  std::string authorization_provider =  // authorizationProvider
      "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider";
  std::vector<std::string> super_user_roles;            // superUserRoles
  bool authorization_allow_wildcards_matching = false;  // authorizationAllowWildcardsMatching
  // Connections through a Pulsar proxy (§1.5, §4.3): a role listed in proxyRoles must name
  // the client it speaks for (CONNECT's original_principal, HTTP's X-Original-Principal), and
  // both roles must be allowed. With authenticateOriginalAuthData the client's forwarded
  // credentials are authenticated again instead of trusting the name.
  std::vector<std::string> proxy_roles;          // proxyRoles
  bool authenticate_original_auth_data = false;  // authenticateOriginalAuthData
  // The broker's own clients (replicators, forwarded admin calls): their credentials.
  std::string broker_client_authentication_plugin;      // brokerClientAuthenticationPlugin
  std::string broker_client_authentication_parameters;  // brokerClientAuthenticationParameters
  int32_t ttl_duration_default_in_seconds = 0;          // ttlDurationDefaultInSeconds (0: none)
  double message_expiry_check_interval_minutes = 5;     // messageExpiryCheckIntervalInMinutes
  double backlog_quota_check_interval_seconds = 60;     // backlogQuotaCheckIntervalInSeconds
  // Period of the rates in stats and /metrics (msgRateIn, pulsar_rate_in, ...).
  double stats_update_frequency_seconds = 60;  // statsUpdateFrequencyInSecs
  // Topic compaction: a topic whose backlog after its compaction horizon passes the threshold
  // (namespace or topic policy, else this) is compacted at the next check. 0: never.
  // brokerServiceCompactionThresholdInBytes, brokerServiceCompactionMonitorIntervalInSeconds
  int64_t broker_service_compaction_threshold_in_bytes = 0;
  double broker_service_compaction_monitor_interval_seconds = 60;
  bool topic_compaction_retain_null_key = false;  // topicCompactionRetainNullKey
  // Replicated subscriptions (PIP-33): enableReplicatedSubscriptions,
  // replicatedSubscriptionsSnapshot{FrequencyMillis,TimeoutSeconds,MaxCachedPerSubscription}.
  bool enable_replicated_subscriptions = true;
  int64_t replicated_subscriptions_snapshot_frequency_ms = 1000;
  int64_t replicated_subscriptions_snapshot_timeout_seconds = 30;
  int32_t replicated_subscriptions_snapshot_max_cached = 10;
  int64_t backlog_quota_default_limit_bytes = -1;       // backlogQuotaDefaultLimitBytes (-1: none)
  // backlogQuotaDefaultRetentionPolicy
  std::string backlog_quota_default_retention_policy = "producer_request_hold";
  int32_t max_unacked_messages_per_consumer = 50000;  // maxUnackedMessagesPerConsumer
  // Delayed delivery (PIP-26) on Shared and Key_Shared subscriptions, unless a namespace's
  // delayed_delivery_policies or a topic's policies say otherwise: delayedDeliveryEnabled,
  // delayedDeliveryTickTimeMillis, delayedDeliveryMaxDelayInMillis (0: no limit; a longer
  // delay is refused at publish), isDelayedDeliveryDeliverAtTimeStrict (false: up to a tick
  // early), delayedDeliveryFixedDelayDetectionLookahead (0: off).
  bool delayed_delivery_enabled = true;
  int64_t delayed_delivery_tick_time_millis = 1000;
  int64_t delayed_delivery_max_delay_in_millis = 0;
  bool is_delayed_delivery_deliver_at_time_strict = false;
  int64_t delayed_delivery_fixed_delay_detection_lookahead = 50000;
  int32_t subscription_key_shared_consistent_hashing_replica_points = 100;
  int32_t default_number_of_namespace_bundles = 4;  // defaultNumberOfNamespaceBundles
  bool load_balancer_enabled = true;                // loadBalancerEnabled
  int64_t load_balancer_report_update_min_interval_millis = 5000;
  double load_balancer_report_update_max_interval_minutes = 15;
  double load_balancer_report_update_threshold_percentage = 10;
  double load_balancer_broker_overloaded_threshold_percentage = 85;
  bool load_balancer_auto_bundle_split_enabled = true;  // loadBalancerAutoBundleSplitEnabled
  bool load_balancer_auto_unload_split_bundles_enabled = true;  // ...AutoUnloadSplitBundlesEnabled
  int32_t load_balancer_namespace_maximum_bundles = 128;     // loadBalancerNamespaceMaximumBundles
  int32_t load_balancer_namespace_bundle_max_topics = 1000;  // ...NamespaceBundleMaxTopics
  int32_t load_balancer_namespace_bundle_max_sessions = 1000;   // ...NamespaceBundleMaxSessions
  int32_t load_balancer_namespace_bundle_max_msg_rate = 30000;  // ...NamespaceBundleMaxMsgRate
  int32_t load_balancer_namespace_bundle_max_bandwidth_mbytes = 100;  // ...MaxBandwidthMbytes

  // Where the broker's ledger client places ledgers (docs/geo-replication.md, "Racks and
  // regions"): the bookies' racks come from /bookies; these pick the policy. Region-aware wins
  // over rack-aware; neither: random. Checked at start (broker/bookie_placement.h).
  bool bookkeeper_client_rackaware_policy_enabled = true;     // ...RackawarePolicyEnabled
  bool bookkeeper_client_regionaware_policy_enabled = false;  // ...RegionawarePolicyEnabled
  int32_t bookkeeper_client_min_num_racks_per_write_quorum = 2;  // ...MinNumRacksPerWriteQuorum
  bool bookkeeper_client_enforce_min_num_racks_per_write_quorum = false;  // ...Enforce...
  // BookKeeper's region-aware keys, which Pulsar forwards from broker.conf:
  std::string repp_regions_to_write;             // reppRegionsToWrite: "r1;r2;r3" (empty: any)
  int32_t repp_minimum_regions_for_durability = 2;       // reppMinimumRegionsForDurability
  bool repp_enable_validation = true;                    // reppEnableValidation
  bool repp_enable_durability_enforcement_in_replace = true;  // ...EnforcementInReplace
  // bookkeeper_enforceMinNumFaultDomainsForWrite (BookKeeper's client key, forwarded with
  // Pulsar's bookkeeper_ prefix): an add completes only once the bookies that stored it span
  // reppMinimumRegionsForDurability regions. BookKeeper's default is false; ours is true, so
  // that E=3 Qw=3 Qa=2 over three regions keeps writing, still into two regions, after one
  // region is lost (docs/geo-replication.md). Region-aware placement only.
  bool enforce_min_num_fault_domains_for_write = true;
  // bookkeeperClientBookieAddressOverrides: "id=a.b.c.d:port,..." bookies reached at another
  // address than their id (a relay, a NAT); ids stay as they are everywhere else.
  std::string bookie_address_overrides;
  // Not a key: bookies in this process (`magnetar standalone`'s embedded one), which the
  // ledger clients reach by calls instead of the loopback socket (protocol/local_bookie.h).
  std::map<std::string, std::shared_ptr<protocol::LocalBookie>> local_bookies;

  metadata::MetadataConfig metadata;
  mledger::ManagedLedgerConfig managed_ledger;
  mledger::ManagedLedgerFactoryConfig managed_ledger_factory;

  std::string service_url() const;  // pulsar://advertisedAddress:brokerServicePort
  std::string web_service_url() const;
  // pulsar+ssl://advertisedAddress:brokerServicePortTls and https://...:webServicePortTls,
  // or empty without that listener.
  std::string service_url_tls() const;
  std::string web_service_url_tls() const;
  // The server TLS settings of both TLS listeners.
  // Whether `role` is one of proxyRoles (an empty role never is).
  bool is_proxy_role(std::string_view role) const;
};

// Declares the broker keys (and the metadata and managed-ledger keys) bound to `config`.
// Every key of Pulsar's shipped broker.conf and standalone.conf.
std::span<const std::string_view> pulsar_broker_keys();

void bind_broker_config(ConfigSchema& schema, BrokerConfig* config);

}  // namespace magnetar::broker
