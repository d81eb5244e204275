#pragma once
// A non-persistent topic (non-persistent://tenant/ns/topic), as Pulsar's NonPersistentTopic:
// producers and subscriptions in memory, and no storage at all: no managed ledger, no cursor,
// nothing that survives an unload or a restart. A published message is answered at once
// (SEND_RECEIPT with message id 0:0, as Pulsar's) and handed to every subscription, which
// sends it to a consumer with a permit or drops it (non_persistent_subscription.h).
// Deduplication, backlog quotas, retention, TTL, compaction and replication do not apply;
// access modes, max producers/consumers, the publish rate and schemas do.
//
// Threading: the topic, its producers, subscriptions and consumers live on the topic's event
// loop (executor()), as a persistent topic's do. Lifetime: owned by the topic registry while
// loaded.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/service/metrics.h"
#include "broker/service/non_persistent_subscription.h"
#include "broker/service/rates.h"
#include "broker/service/topic_interface.h"
#include "broker/service/topic_producers.h"
#include "common/logging.h"

namespace magnetar::broker {

class NonPersistentTopic final : public Topic {
 public:
  // `config` outlives the topic.
  NonPersistentTopic(const BrokerConfig& config, Executor executor, protocol::TopicName name);
  ~NonPersistentTopic() override;
  NonPersistentTopic(const NonPersistentTopic&) = delete;
  NonPersistentTopic& operator=(const NonPersistentTopic&) = delete;

  const Executor& executor() const override { return executor_; }
  const protocol::TopicName& name() const override { return name_; }
  const TopicPolicies& policies() const override { return policies_; }
  void set_policies(TopicPolicies policies);

  // Errors: kProducerBusy, kProducerFenced.
  Result<Added> add_producer(const std::shared_ptr<Producer>& producer,
                             TopicProducers::Decided decided) override;
  void remove_producer(uint64_t producer_id, const ProducerSink* owner) override;
  // Dispatches the entry to every subscription now; `done` gets 0:0 at once.
  void publish(const std::shared_ptr<Producer>& producer, Buffer entry, SendInfo send,
               std::function<void(Published)> done) override;
  int64_t last_sequence_id(const std::string&) const override { return -1; }

  // The subscription, made when missing. Errors: kReservedName.
  Result<std::shared_ptr<NonPersistentSubscription>> subscribe(const std::string& name,
                                                               bool durable);
  // Adds a consumer to `sub` (the topic's max consumers first). Errors: kConsumerBusy,
  // kConsumerAssignError.
  Status add_consumer(NonPersistentSubscription& sub, const std::shared_ptr<Consumer>& consumer,
                      SubType type);
  // Removes a consumer; a reader's subscription goes with its last consumer.
  void remove_consumer(NonPersistentSubscription& sub, uint64_t consumer_id,
                       const ConsumerSink* owner);
  // Errors: kSubscriptionNotFound, kSubscriptionBusy (other consumers, not forced).
  Status unsubscribe(const std::string& name, bool force);
  std::shared_ptr<NonPersistentSubscription> find_subscription(const std::string& name) const;
  const std::map<std::string, std::shared_ptr<NonPersistentSubscription>>& subscriptions() const {
    return subscriptions_;
  }
  size_t consumer_count() const;
  bool has_clients() const;

  // Disconnects producers and consumers (they reconnect, to whichever broker owns it next).
  void close();
  // As PersistentTopic's: counters for load reports, the stats JSON (Pulsar's
  // NonPersistentTopicStats), gauges, and the end of a stats period.
  using Totals = TopicTotals;
  Totals totals() const;
  nlohmann::json stats() const;
  void refresh_metrics();
  void update_rates(double seconds);
  // Since when nobody uses the topic.
  std::chrono::steady_clock::time_point last_active() const { return last_active_; }
  void mark_active(std::chrono::steady_clock::time_point now) { last_active_ = now; }

 private:
  const BrokerConfig& config_;
  const Executor executor_;
  const protocol::TopicName name_;
  log::Logger log_;
  TopicPolicies policies_;
  TopicProducers producers_;
  RateLimiter publish_limiter_;
  std::map<std::string, std::shared_ptr<NonPersistentSubscription>> subscriptions_;
  // Of subscriptions gone, so that the topic's counters never go down.
  int64_t msgs_out_gone_ = 0, bytes_out_gone_ = 0;
  int64_t msgs_in_ = 0, bytes_in_ = 0;
  RateMeter in_rate_;
  double out_msg_rate_ = 0, out_byte_rate_ = 0;  // the subscriptions' sums
  std::chrono::steady_clock::time_point last_active_ = std::chrono::steady_clock::now();
  TopicMetrics metrics_;
  std::shared_ptr<metrics::Gauge> topics_count_;  // of the namespace, on this broker
};

}  // namespace magnetar::broker
