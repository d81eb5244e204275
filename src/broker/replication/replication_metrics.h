#pragma once
// The replicators' Prometheus series, with Pulsar's names and labels (cluster, namespace,
// topic, remote_cluster), in the process's default registry (served at /metrics). A
// replicator updates its children once a second and removes them when it stops.

#include <memory>
#include <string>

#include "common/metrics.h"

namespace magnetar::broker {

struct ReplicationMetrics {
  std::shared_ptr<metrics::Gauge> backlog;         // pulsar_replication_backlog
  std::shared_ptr<metrics::Gauge> rate_out;        // pulsar_replication_rate_out
  std::shared_ptr<metrics::Gauge> throughput_out;  // pulsar_replication_throughput_out
  std::shared_ptr<metrics::Gauge> delay_seconds;   // pulsar_replication_delay_in_seconds
  std::shared_ptr<metrics::Gauge> connected;       // pulsar_replication_connected_count (1/0)
  std::shared_ptr<metrics::Gauge> disconnected;    // pulsar_replication_disconnected_count
};

ReplicationMetrics replication_metrics(const std::string& cluster, const std::string& ns,
                                       const std::string& topic, const std::string& remote);
void remove_replication_metrics(const std::string& cluster, const std::string& ns,
                                const std::string& topic, const std::string& remote);

}  // namespace magnetar::broker
