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
  metrics::Family<metrics::Gauge>* sub_consumers;
  metrics::Family<metrics::Gauge>* connections;
};

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
    out.sub_consumers =
        r.gauge("pulsar_subscription_consumers_count", "Consumers of the subscription", kSubLabels)
            .value();
    out.connections =
        r.gauge("pulsar_active_connections", "Open client connections", {"cluster"}).value();
    return out;
  }();
  return f;
}

}  // namespace

TopicMetrics topic_metrics(const std::string& c, const std::string& ns, const std::string& t) {
  auto& f = families();
  return TopicMetrics{f.in_messages->get(c, ns, t),  f.in_bytes->get(c, ns, t),
                      f.storage_size->get(c, ns, t), f.backlog->get(c, ns, t),
                      f.producers->get(c, ns, t),    f.consumers->get(c, ns, t),
                      f.subscriptions->get(c, ns, t)};
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
}

SubscriptionMetrics subscription_metrics(const std::string& c, const std::string& ns,
                                         const std::string& t, const std::string& s) {
  auto& f = families();
  return SubscriptionMetrics{f.out_messages->get(c, ns, t, s), f.out_bytes->get(c, ns, t, s),
                             f.sub_back_log->get(c, ns, t, s), f.sub_unacked->get(c, ns, t, s),
                             f.sub_consumers->get(c, ns, t, s)};
}

void remove_subscription_metrics(const std::string& c, const std::string& ns, const std::string& t,
                                 const std::string& s) {
  auto& f = families();
  f.out_messages->remove(c, ns, t, s);
  f.out_bytes->remove(c, ns, t, s);
  f.sub_back_log->remove(c, ns, t, s);
  f.sub_unacked->remove(c, ns, t, s);
  f.sub_consumers->remove(c, ns, t, s);
}

std::shared_ptr<metrics::Gauge> active_connections_gauge(const std::string& cluster) {
  return families().connections->get(cluster);
}

}  // namespace magnetar::broker
