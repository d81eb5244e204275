#pragma once
// The proxy's Prometheus series, Pulsar's names with the `cluster` label (reference §6.6):
//
//   pulsar_proxy_active_connections          gauge    client connections open now
//   pulsar_proxy_new_connections             counter  client connections accepted
//   pulsar_proxy_rejected_connections        counter  closed at once (maxConcurrentInboundConnections)
//   pulsar_proxy_binary_ops                  counter  frames handled by the proxy itself and
//                                                     reads relayed on spliced connections
//   pulsar_proxy_binary_bytes                counter  bytes relayed on spliced connections
//   magnetar_proxy_bytes_in_total            counter  of those, client to broker
//   magnetar_proxy_bytes_out_total           counter  of those, broker to client
//   pulsar_proxy_lookup_requests, _partitions_metadata_requests,
//   _get_topics_of_namespace_requests, _get_schema_requests             counters
//   pulsar_proxy_rejected_lookup_requests, _rejected_partitions_metadata_requests,
//   _rejected_get_topics_of_namespace_requests, _rejected_get_schema_requests  counters
//                                                     refused by maxConcurrentLookupRequests
//
// Counters are atomics: updated from any event loop.

#include <memory>
#include <string>

#include "common/metrics.h"

namespace magnetar::proxy {

struct ProxyMetrics {
  std::shared_ptr<metrics::Gauge> active_connections;
  std::shared_ptr<metrics::Counter> new_connections;
  std::shared_ptr<metrics::Counter> rejected_connections;
  std::shared_ptr<metrics::Counter> binary_ops;
  std::shared_ptr<metrics::Counter> binary_bytes;
  std::shared_ptr<metrics::Counter> bytes_in;   // client -> broker
  std::shared_ptr<metrics::Counter> bytes_out;  // broker -> client
  std::shared_ptr<metrics::Counter> lookups;
  std::shared_ptr<metrics::Counter> partition_metadata;
  std::shared_ptr<metrics::Counter> topics_of_namespace;
  std::shared_ptr<metrics::Counter> schemas;
  std::shared_ptr<metrics::Counter> rejected_lookups;
  std::shared_ptr<metrics::Counter> rejected_partition_metadata;
  std::shared_ptr<metrics::Counter> rejected_topics_of_namespace;
  std::shared_ptr<metrics::Counter> rejected_schemas;
};

// The series of `cluster`, registered in the process's default registry on first use.
ProxyMetrics proxy_metrics(const std::string& cluster);

}  // namespace magnetar::proxy
