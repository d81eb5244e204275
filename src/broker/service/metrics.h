#pragma once
// The broker's Prometheus metrics, with Pulsar's names and labels (cluster, namespace, topic
// [, subscription]), in the process's default registry (served at /metrics).

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

}  // namespace magnetar::broker
