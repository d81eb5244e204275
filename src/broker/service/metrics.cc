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
  metrics::Family<metrics::Counter>* connections_created;
  metrics::Family<metrics::Counter>* connections_closed;
  metrics::Family<metrics::Counter>* auth_success;
  metrics::Family<metrics::Counter>* auth_failures;
  metrics::Family<metrics::Counter>* expired_tokens;
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
    out.connections_created = r.counter("pulsar_connection_created_total_count",
                                        "Client connections accepted", {"cluster"})
                                  .value();
    out.connections_closed =
        r.counter("pulsar_connection_closed_total_count", "Client connections closed", {"cluster"})
            .value();
    out.auth_success = r.counter("pulsar_authentication_success_total", "Credentials accepted",
                                 {"provider_name", "auth_method"})
                           .value();
    out.auth_failures = r.counter("pulsar_authentication_failures_total", "Credentials refused",
                                  {"provider_name", "auth_method", "reason"})
                            .value();
    out.expired_tokens =
        r.counter("pulsar_expired_token_total", "Tokens refused because they expired").value();
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

ConnectionCounters connection_counters(const std::string& cluster) {
  return ConnectionCounters{families().connections_created->get(cluster),
                            families().connections_closed->get(cluster)};
}

AuthenticationMetrics authentication_metrics(const std::string& provider,
                                             const std::string& method) {
  auto& f = families();
  AuthenticationMetrics out;
  out.success = f.auth_success->get(provider, method);
  for (const char* reason :
       {"INVALID_AUTH_DATA", "INVALID_TOKEN", "INVALID_AUDIENCES", "EXPIRED_TOKEN"}) {
    out.failures.emplace(reason, f.auth_failures->get(provider, method, reason));
  }
  out.expired = f.expired_tokens->get();
  return out;
}

}  // namespace magnetar::broker
