#include "broker/service/metrics.h"

namespace magnetar::broker {

namespace {

const std::vector<std::string> kTopicLabels = {"cluster", "namespace", "topic"};
const std::vector<std::string> kSubLabels = {"cluster", "namespace", "topic", "subscription"};

struct Families {
  metrics::Family<metrics::Counter>* in_messages;
  metrics::Family<metrics::Counter>* in_bytes;
  metrics::Family<metrics::Gauge>* storage_size;
  metrics::Family<metrics::Gauge>* backlog;
  metrics::Family<metrics::Gauge>* producers;
  metrics::Family<metrics::Gauge>* consumers;
  metrics::Family<metrics::Gauge>* subscriptions;
  metrics::Family<metrics::Counter>* out_messages;
  metrics::Family<metrics::Counter>* out_bytes;
  metrics::Family<metrics::Gauge>* sub_back_log;
  metrics::Family<metrics::Gauge>* sub_unacked;
  metrics::Family<metrics::Gauge>* sub_delayed;
  metrics::Family<metrics::Gauge>* sub_consumers;
  metrics::Family<metrics::Gauge>* connections;
  metrics::Family<metrics::Counter>* connections_created;
  metrics::Family<metrics::Counter>* connections_closed;
  metrics::Family<metrics::Gauge>* rate_in;
  metrics::Family<metrics::Gauge>* rate_out;
  metrics::Family<metrics::Gauge>* throughput_in;
  metrics::Family<metrics::Gauge>* throughput_out;
  metrics::Family<metrics::Gauge>* average_msg_size;
  metrics::Family<metrics::Gauge>* storage_write_rate;
  metrics::Family<metrics::Gauge>* storage_read_rate;
  metrics::Family<metrics::Gauge>* logical_size;
  metrics::Family<metrics::Gauge>* backlog_size;
  std::vector<metrics::Family<metrics::Gauge>*> write_latency;
  std::vector<metrics::Family<metrics::Gauge>*> entry_size;
  metrics::Family<metrics::Gauge>* sub_rate_out;
  metrics::Family<metrics::Gauge>* sub_throughput_out;
  metrics::Family<metrics::Gauge>* sub_rate_redeliver;
  metrics::Family<metrics::Gauge>* topics_count;
  metrics::Family<metrics::Summary>* publish_latency;
};

// Pulsar's names of the bucket gauges, in the order of PeriodBuckets::Period plus count, sum.
const std::vector<std::string> kWriteLatencyNames = {
    "le_0_5", "le_1", "le_5", "le_10", "le_20", "le_50", "le_100", "le_200", "le_1000",
    "overflow", "count", "sum"};
// Pulsar's quantiles of pulsar_broker_publish_latency.
constexpr double kPublishLatencyQuantiles[] = {0.0, 0.5, 0.95, 0.99, 0.999, 0.9999, 1.0};
const std::vector<std::string> kEntrySizeNames = {
    "le_128", "le_512", "le_1_kb", "le_2_kb", "le_4_kb", "le_16_kb", "le_100_kb", "le_1_mb",
    "le_overflow", "count", "sum"};

template <typename... Values>
std::vector<std::shared_ptr<metrics::Gauge>> children(
    const std::vector<metrics::Family<metrics::Gauge>*>& families, const Values&... values) {
  std::vector<std::shared_ptr<metrics::Gauge>> out;
  for (auto* f : families) out.push_back(f->get(values...));
  return out;
}

Families& families() {
  static Families f = [] {
    auto& r = metrics::default_registry();
    Families out;
    out.in_messages =
        r.counter("pulsar_in_messages_total", "Messages published", kTopicLabels).value();
    out.in_bytes = r.counter("pulsar_in_bytes_total", "Bytes published", kTopicLabels).value();
    out.storage_size =
        r.gauge("pulsar_storage_size", "Bytes stored for the topic", kTopicLabels).value();
    out.backlog = r.gauge("pulsar_msg_backlog",
                          "Entries not yet acknowledged by the slowest "
                          "subscription",
                          kTopicLabels)
                      .value();
    out.producers = r.gauge("pulsar_producers_count", "Connected producers", kTopicLabels).value();
    out.consumers = r.gauge("pulsar_consumers_count", "Connected consumers", kTopicLabels).value();
    out.subscriptions =
        r.gauge("pulsar_subscriptions_count", "Subscriptions", kTopicLabels).value();
    out.out_messages =
        r.counter("pulsar_out_messages_total", "Messages dispatched", kSubLabels).value();
    out.out_bytes = r.counter("pulsar_out_bytes_total", "Bytes dispatched", kSubLabels).value();
    out.sub_back_log =
        r.gauge("pulsar_subscription_back_log", "Unacknowledged entries", kSubLabels).value();
    out.sub_unacked = r.gauge("pulsar_subscription_unacked_messages",
                              "Messages sent and not acknowledged", kSubLabels)
                          .value();
    out.sub_delayed = r.gauge("pulsar_subscription_delayed",
                              "Messages held until their delivery time", kSubLabels)
                          .value();
    out.sub_consumers =
        r.gauge("pulsar_subscription_consumers_count", "Consumers of the subscription", kSubLabels)
            .value();
    out.connections =
        r.gauge("pulsar_active_connections", "Open client connections", {"cluster"}).value();
    out.connections_created = r.counter("pulsar_connection_created_total_count",
                                        "Client connections accepted", {"cluster"})
                                  .value();
    out.connections_closed =
        r.counter("pulsar_connection_closed_total_count", "Client connections closed", {"cluster"})
            .value();
    out.publish_latency =
        r.summary("pulsar_broker_publish_latency",
                  "Publish latency (ms): from the SEND handled to the entry stored", {"cluster"},
                  kPublishLatencyQuantiles)
            .value();
    auto topic_gauge = [&r](const std::string& name, const char* help) {
      return r.gauge(name, help, kTopicLabels).value();
    };
    out.rate_in = topic_gauge("pulsar_rate_in", "Messages published per second");
    out.rate_out = topic_gauge("pulsar_rate_out", "Messages dispatched per second");
    out.throughput_in = topic_gauge("pulsar_throughput_in", "Bytes published per second");
    out.throughput_out = topic_gauge("pulsar_throughput_out", "Bytes dispatched per second");
    out.average_msg_size =
        topic_gauge("pulsar_average_msg_size", "Average size of the messages published (bytes)");
    out.storage_write_rate =
        topic_gauge("pulsar_storage_write_rate", "Entries written to storage per second");
    out.storage_read_rate =
        topic_gauge("pulsar_storage_read_rate", "Entries read and dispatched per second");
    out.logical_size =
        topic_gauge("pulsar_storage_logical_size", "Bytes stored, without replicas");
    out.backlog_size = topic_gauge("pulsar_storage_backlog_size",
                                   "Bytes not yet acknowledged by the slowest subscription");
    for (const auto& n : kWriteLatencyNames) {
      out.write_latency.push_back(
          topic_gauge("pulsar_storage_write_latency_" + n,
                      "Entries stored within the bound (ms) over the last stats period"));
    }
    for (const auto& n : kEntrySizeNames) {
      out.entry_size.push_back(topic_gauge(
          "pulsar_entry_size_" + n, "Entries within the size bound over the last stats period"));
    }
    auto sub_gauge = [&r](const std::string& name, const char* help) {
      return r.gauge(name, help, kSubLabels).value();
    };
    out.sub_rate_out =
        sub_gauge("pulsar_subscription_msg_rate_out", "Messages dispatched per second");
    out.sub_throughput_out =
        sub_gauge("pulsar_subscription_msg_throughput_out", "Bytes dispatched per second");
    out.sub_rate_redeliver =
        sub_gauge("pulsar_subscription_msg_rate_redeliver", "Messages redelivered per second");
    out.topics_count =
        r.gauge("pulsar_topics_count", "Topics of the namespace loaded on this broker",
                {"cluster", "namespace"})
            .value();
    return out;
  }();
  return f;
}

}  // namespace

TopicMetrics topic_metrics(const std::string& c, const std::string& ns, const std::string& t) {
  auto& f = families();
  TopicMetrics m;
  m.in_messages = f.in_messages->get(c, ns, t);
  m.in_bytes = f.in_bytes->get(c, ns, t);
  m.storage_size = f.storage_size->get(c, ns, t);
  m.backlog = f.backlog->get(c, ns, t);
  m.producers = f.producers->get(c, ns, t);
  m.consumers = f.consumers->get(c, ns, t);
  m.subscriptions = f.subscriptions->get(c, ns, t);
  m.rate_in = f.rate_in->get(c, ns, t);
  m.rate_out = f.rate_out->get(c, ns, t);
  m.throughput_in = f.throughput_in->get(c, ns, t);
  m.throughput_out = f.throughput_out->get(c, ns, t);
  m.average_msg_size = f.average_msg_size->get(c, ns, t);
  m.storage_write_rate = f.storage_write_rate->get(c, ns, t);
  m.storage_read_rate = f.storage_read_rate->get(c, ns, t);
  m.logical_size = f.logical_size->get(c, ns, t);
  m.backlog_size = f.backlog_size->get(c, ns, t);
  m.write_latency = children(f.write_latency, c, ns, t);
  m.entry_size = children(f.entry_size, c, ns, t);
  m.publish_latency = f.publish_latency->get(c);
  return m;
}

void remove_topic_metrics(const std::string& c, const std::string& ns, const std::string& t) {
  auto& f = families();
  f.in_messages->remove(c, ns, t);
  f.in_bytes->remove(c, ns, t);
  f.storage_size->remove(c, ns, t);
  f.backlog->remove(c, ns, t);
  f.producers->remove(c, ns, t);
  f.consumers->remove(c, ns, t);
  f.subscriptions->remove(c, ns, t);
  for (auto* g : {f.rate_in, f.rate_out, f.throughput_in, f.throughput_out, f.average_msg_size,
                  f.storage_write_rate, f.storage_read_rate, f.logical_size, f.backlog_size}) {
    g->remove(c, ns, t);
  }
  for (auto* g : f.write_latency) g->remove(c, ns, t);
  for (auto* g : f.entry_size) g->remove(c, ns, t);
}

SubscriptionMetrics subscription_metrics(const std::string& c, const std::string& ns,
                                         const std::string& t, const std::string& s) {
  auto& f = families();
  return SubscriptionMetrics{
      f.out_messages->get(c, ns, t, s),       f.out_bytes->get(c, ns, t, s),
      f.sub_back_log->get(c, ns, t, s),       f.sub_unacked->get(c, ns, t, s),
      f.sub_consumers->get(c, ns, t, s),      f.sub_delayed->get(c, ns, t, s),
      f.sub_rate_out->get(c, ns, t, s),       f.sub_throughput_out->get(c, ns, t, s),
      f.sub_rate_redeliver->get(c, ns, t, s)};
}

void remove_subscription_metrics(const std::string& c, const std::string& ns, const std::string& t,
                                 const std::string& s) {
  auto& f = families();
  f.out_messages->remove(c, ns, t, s);
  f.out_bytes->remove(c, ns, t, s);
  f.sub_back_log->remove(c, ns, t, s);
  f.sub_unacked->remove(c, ns, t, s);
  f.sub_delayed->remove(c, ns, t, s);
  f.sub_consumers->remove(c, ns, t, s);
  f.sub_rate_out->remove(c, ns, t, s);
  f.sub_throughput_out->remove(c, ns, t, s);
  f.sub_rate_redeliver->remove(c, ns, t, s);
}

std::shared_ptr<metrics::Gauge> active_connections_gauge(const std::string& cluster) {
  return families().connections->get(cluster);
}

std::shared_ptr<metrics::Gauge> topics_count_gauge(const std::string& cluster,
                                                   const std::string& ns) {
  return families().topics_count->get(cluster, ns);
}

ConnectionCounters connection_counters(const std::string& cluster) {
  return ConnectionCounters{families().connections_created->get(cluster),
                            families().connections_closed->get(cluster)};
}

}  // namespace magnetar::broker
