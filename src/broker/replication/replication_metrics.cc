#include "broker/replication/replication_metrics.h"

#include <vector>

namespace magnetar::broker {

namespace {

const std::vector<std::string> kLabels = {"cluster", "namespace", "topic", "remote_cluster"};

struct Families {
  metrics::Family<metrics::Gauge>* backlog;
  metrics::Family<metrics::Gauge>* rate_out;
  metrics::Family<metrics::Gauge>* throughput_out;
  metrics::Family<metrics::Gauge>* delay_seconds;
  metrics::Family<metrics::Gauge>* connected;
  metrics::Family<metrics::Gauge>* disconnected;
};

Families& families() {
  static Families f = [] {
    auto& r = metrics::default_registry();
    auto gauge = [&r](const char* name, const char* help) {
      return r.gauge(name, help, kLabels).value();
    };
    return Families{
        gauge("pulsar_replication_backlog", "Entries not yet replicated to the remote cluster"),
        gauge("pulsar_replication_rate_out", "Messages per second sent to the remote cluster"),
        gauge("pulsar_replication_throughput_out", "Bytes per second sent to the remote cluster"),
        gauge("pulsar_replication_delay_in_seconds",
              "Age of the oldest send still waiting for the remote cluster"),
        gauge("pulsar_replication_connected_count", "1 while the replicator is connected"),
        gauge("pulsar_replication_disconnected_count", "1 while the replicator is not connected"),
    };
  }();
  return f;
}

}  // namespace

ReplicationMetrics replication_metrics(const std::string& c, const std::string& ns,
                                       const std::string& t, const std::string& r) {
  auto& f = families();
  return ReplicationMetrics{f.backlog->get(c, ns, t, r),        f.rate_out->get(c, ns, t, r),
                            f.throughput_out->get(c, ns, t, r), f.delay_seconds->get(c, ns, t, r),
                            f.connected->get(c, ns, t, r),      f.disconnected->get(c, ns, t, r)};
}

void remove_replication_metrics(const std::string& c, const std::string& ns, const std::string& t,
                                const std::string& r) {
  auto& f = families();
  for (auto* family :
       {f.backlog, f.rate_out, f.throughput_out, f.delay_seconds, f.connected, f.disconnected}) {
    family->remove(c, ns, t, r);
  }
}

}  // namespace magnetar::broker
