#pragma once
// A subscription of a non-persistent topic: its consumers and nothing else. Nothing is
// stored, so nothing waits: each message the topic publishes goes at once to the consumer the
// subscription's kind chooses, if that consumer has a permit, and is dropped otherwise
// (counted: msgDropRate). Pulsar's NonPersistentDispatcherSingleActiveConsumer (Exclusive,
// Failover: the active consumer), NonPersistentDispatcherMultipleConsumers (Shared: round
// robin over the consumers with permits) and NonPersistentStickyKeyDispatcherMultipleConsumers
// (Key_Shared: the key's consumer, consumer_selection.h). Acknowledgements, redelivery
// requests and seeks change nothing.
//
// Threading: on the topic's loop. The topic owns its subscriptions.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "broker/service/consumer_selection.h"
#include "broker/service/dispatcher.h"
#include "broker/service/entry_metadata.h"
#include "broker/service/rates.h"
#include "common/buffer.h"
#include "common/status.h"
#include "mledger/position.h"

namespace magnetar::broker {

// What a non-persistent topic's messages carry as their id, in SEND_RECEIPT and MESSAGE
// alike: 0:0, as Pulsar's NonPersistentTopic gives every message.
inline const mledger::Position kNonPersistentPosition{LedgerId{0}, EntryId{0}};

class NonPersistentSubscription {
 public:
  // `partition`: the topic's partition index (-1: not a partition), for Failover's choice.
  // `durable`: false for a reader's, which goes away with its consumer.
  NonPersistentSubscription(std::string name, bool durable, int partition);
  NonPersistentSubscription(const NonPersistentSubscription&) = delete;
  NonPersistentSubscription& operator=(const NonPersistentSubscription&) = delete;

  const std::string& name() const { return name_; }
  bool durable() const { return durable_; }
  // The kind its consumers chose (nullopt before the first one).
  std::optional<SubType> type() const { return type_; }
  const Consumers& consumers() const { return consumers_; }

  // Errors: kConsumerBusy (another type while consumers are connected, Exclusive taken),
  // kConsumerAssignError (Key_Shared sticky ranges).
  Status add_consumer(const std::shared_ptr<Consumer>& consumer, SubType type);
  // False when no such consumer.
  bool remove_consumer(uint64_t consumer_id, const ConsumerSink* owner);
  std::shared_ptr<Consumer> find_consumer(uint64_t consumer_id, const ConsumerSink* owner) const;
  void flow(const std::shared_ptr<Consumer>& consumer, uint32_t permits);
  // One published message (an entry of `info.messages` messages): to its consumer, or dropped.
  void dispatch(const Buffer& entry, const EntryInfo& info);
  // Disconnects every consumer (CLOSE_CONSUMER); they may come back.
  void disconnect_all();

  int64_t msgs_out() const { return msgs_out_; }
  int64_t bytes_out() const { return bytes_out_; }
  int64_t msgs_dropped() const { return msgs_dropped_; }
  const RateMeter& out_rate() const { return out_rate_; }
  double drop_rate() const { return drop_rate_.msg_rate(); }
  void update_rates(double seconds);
  // Pulsar's NonPersistentSubscriptionStats.
  nlohmann::json stats() const;

 private:
  std::shared_ptr<Consumer> target_for(const EntryInfo& info);

  const std::string name_;
  const bool durable_;
  const int partition_;
  std::optional<SubType> type_;
  Consumers consumers_;
  size_t next_ = 0;  // Shared: where the round robin goes on
  KeySharedRanges ranges_;
  ActiveConsumerNotifier notifier_;
  int64_t msgs_out_ = 0, bytes_out_ = 0, msgs_dropped_ = 0;
  RateMeter out_rate_, drop_rate_;
};

}  // namespace magnetar::broker
