#pragma once
// The broker's Prometheus metrics, with Pulsar's names and labels (cluster, namespace, topic
// [, subscription]), in the process's default registry (served at /metrics).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"

namespace magnetar::broker {

struct TopicMetrics {
  std::shared_ptr<metrics::Counter> in_messages, in_bytes;
  std::shared_ptr<metrics::Gauge> storage_size, backlog, producers, consumers, subscriptions;
  // Of the last stats period (statsUpdateFrequencyInSecs), as Pulsar's.
  std::shared_ptr<metrics::Gauge> rate_in, rate_out, throughput_in, throughput_out,
      average_msg_size, storage_write_rate, storage_read_rate;
  std::shared_ptr<metrics::Gauge> logical_size, backlog_size;
  // pulsar_storage_write_latency_le_0_5 ... _le_1000, _overflow, then _count and _sum
  // (microseconds, as Pulsar sums them); pulsar_entry_size_le_128 ... _le_1_mb, _le_overflow,
  // _count, _sum (bytes).
  std::vector<std::shared_ptr<metrics::Gauge>> write_latency, entry_size;
  // pulsar_broker_publish_latency{cluster} (ms, quantiles over the last 1-2 minutes): from
  // the SEND handled to the entry stored, for every persistent topic of the broker. Shared
  // by all topics; never removed.
  std::shared_ptr<metrics::Summary> publish_latency;
};

struct SubscriptionMetrics {
  std::shared_ptr<metrics::Counter> out_messages, out_bytes;
  std::shared_ptr<metrics::Gauge> back_log, unacked, consumers;
  std::shared_ptr<metrics::Gauge> delayed;  // messages held for their delivery time
  std::shared_ptr<metrics::Gauge> msg_rate_out, msg_throughput_out, msg_rate_redeliver;
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
// pulsar_topics_count{cluster, namespace}: topics of the namespace loaded on this broker.
std::shared_ptr<metrics::Gauge> topics_count_gauge(const std::string& cluster,
                                                   const std::string& ns);

// pulsar_connection_created_total_count / pulsar_connection_closed_total_count.
struct ConnectionCounters {
  std::shared_ptr<metrics::Counter> created;
  std::shared_ptr<metrics::Counter> closed;
};
ConnectionCounters connection_counters(const std::string& cluster);

}  // namespace magnetar::broker
