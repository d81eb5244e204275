#pragma once
// The broker's Prometheus metrics, with Pulsar's names and labels (cluster, namespace, topic
// [, subscription]), in the process's default registry (served at /metrics).

#include <map>
#include <memory>
#include <string>

#include "common/metrics.h"

namespace magnetar::broker {

struct TopicMetrics {
  std::shared_ptr<metrics::Counter> in_messages, in_bytes;
  std::shared_ptr<metrics::Gauge> storage_size, backlog, producers, consumers, subscriptions;
};

struct SubscriptionMetrics {
  std::shared_ptr<metrics::Counter> out_messages, out_bytes;
  std::shared_ptr<metrics::Gauge> back_log, unacked, consumers;
};

// Children for a topic or a subscription (created on load; remove_* on unload).
TopicMetrics topic_metrics(const std::string& cluster, const std::string& ns,
                           const std::string& topic);
void remove_topic_metrics(const std::string& cluster, const std::string& ns,
                          const std::string& topic);
SubscriptionMetrics subscription_metrics(const std::string& cluster, const std::string& ns,
                                         const std::string& topic, const std::string& sub);
void remove_subscription_metrics(const std::string& cluster, const std::string& ns,
                                 const std::string& topic, const std::string& sub);
std::shared_ptr<metrics::Gauge> active_connections_gauge(const std::string& cluster);

// pulsar_connection_created_total_count / pulsar_connection_closed_total_count.
struct ConnectionCounters {
  std::shared_ptr<metrics::Counter> created;
  std::shared_ptr<metrics::Counter> closed;
};
ConnectionCounters connection_counters(const std::string& cluster);

// pulsar_authentication_success_total{provider_name, auth_method},
// pulsar_authentication_failures_total{..., reason} (Pulsar's token reasons) and
// pulsar_expired_token_total. Never a credential in a label.
struct AuthenticationMetrics {
  std::shared_ptr<metrics::Counter> success;
  std::map<std::string, std::shared_ptr<metrics::Counter>, std::less<>> failures;  // by reason
  std::shared_ptr<metrics::Counter> expired;
};
AuthenticationMetrics authentication_metrics(const std::string& provider,
                                             const std::string& method);

}  // namespace magnetar::broker
