#include "proxy/proxy_metrics.h"

namespace magnetar::proxy {

ProxyMetrics proxy_metrics(const std::string& cluster) {
  auto& r = metrics::default_registry();
  auto counter = [&](const char* name, const char* help) {
    return r.counter(name, help, {"cluster"}).value()->get(cluster);
  };
  ProxyMetrics m;
  m.active_connections =
      r.gauge("pulsar_proxy_active_connections", "Client connections open", {"cluster"})
          .value()
          ->get(cluster);
  m.new_connections = counter("pulsar_proxy_new_connections", "Client connections accepted");
  m.rejected_connections = counter("pulsar_proxy_rejected_connections",
                                   "Client connections closed at once: too many open");
  m.binary_ops = counter("pulsar_proxy_binary_ops",
                         "Frames the proxy handled and reads it relayed on spliced connections");
  m.binary_bytes = counter("pulsar_proxy_binary_bytes", "Bytes relayed on spliced connections");
  m.bytes_in = counter("magnetar_proxy_bytes_in_total",
                       "Bytes relayed from clients to brokers on spliced connections");
  m.bytes_out = counter("magnetar_proxy_bytes_out_total",
                        "Bytes relayed from brokers to clients on spliced connections");
  m.lookups = counter("pulsar_proxy_lookup_requests", "LOOKUP requests");
  m.partition_metadata =
      counter("pulsar_proxy_partitions_metadata_requests", "PARTITIONED_METADATA requests");
  m.topics_of_namespace = counter("pulsar_proxy_get_topics_of_namespace_requests",
                                  "GET_TOPICS_OF_NAMESPACE requests");
  m.schemas = counter("pulsar_proxy_get_schema_requests", "GET_SCHEMA requests");
  m.rejected_lookups = counter("pulsar_proxy_rejected_lookup_requests",
                               "LOOKUP requests refused: too many in flight");
  m.rejected_partition_metadata =
      counter("pulsar_proxy_rejected_partitions_metadata_requests",
              "PARTITIONED_METADATA requests refused: too many in flight");
  m.rejected_topics_of_namespace =
      counter("pulsar_proxy_rejected_get_topics_of_namespace_requests",
              "GET_TOPICS_OF_NAMESPACE requests refused: too many in flight");
  m.rejected_schemas = counter("pulsar_proxy_rejected_get_schema_requests",
                               "GET_SCHEMA requests refused: too many in flight");
  return m;
}

}  // namespace magnetar::proxy
