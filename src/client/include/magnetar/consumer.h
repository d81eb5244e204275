#pragma once
// Consumer: receives messages of a subscription on a topic (or on every partition of a
// partitioned topic) and acknowledges them.
//
// Flow control follows Pulsar: the consumer grants the broker receiver_queue_size permits
// and tops them up once half of them have been consumed. After a connection loss it
// re-subscribes by itself; messages it had queued but not handed out are dropped (the broker
// sends them again), and messages it already acknowledged are never handed out twice.
//
// Thread-safety: every method may be called from any thread. The message listener runs on
// the client's listener thread, one message at a time per client.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "magnetar/message.h"

namespace magnetar::client {

enum class SubscriptionType { kExclusive = 0, kShared = 1, kFailover = 2, kKeyShared = 3 };
enum class InitialPosition { kLatest = 0, kEarliest = 1 };

// Messages redelivered more than max_redeliver_count times go to the dead-letter topic
// (default "<topic>-<subscription>-DLQ") and are acknowledged on the original topic.
struct DeadLetterPolicy {
  int max_redeliver_count = 0;
  std::string dead_letter_topic;
};

class Consumer;
using MessageListener = std::function<void(Consumer&, const Message&)>;

struct BatchReceivePolicy {
  int max_messages = 100;
  size_t max_bytes = 10 * 1024 * 1024;
  std::chrono::milliseconds timeout{100};
};

struct ConsumerOptions {
  SubscriptionType type = SubscriptionType::kExclusive;
  InitialPosition initial_position = InitialPosition::kLatest;
  std::string consumer_name;
  int receiver_queue_size = 1000;
  int priority_level = 0;
  // Unacknowledged messages are redelivered after this long (0: never).
  std::chrono::milliseconds ack_timeout{0};
  std::chrono::milliseconds negative_ack_redelivery_delay{60'000};
  std::optional<DeadLetterPolicy> dead_letter_policy;
  MessageListener listener;  // set: messages are pushed here instead of receive()
  BatchReceivePolicy batch_receive_policy;
  std::map<std::string, std::string> properties;
  bool read_compacted = false;
  // Replicate the subscription's position to the topic's other clusters (Pulsar's
  // replicateSubscriptionState; the broker's enableReplicatedSubscriptions must allow it).
  bool replicate_subscription_state = false;
  // Pulsar's subscriptionMode: Durable keeps the subscription (and its position) on the
  // broker; NonDurable (false) has it go away with the last consumer.
  bool durable = true;
  // Checked against the topic's on subscribe; unset: bytes (no check).
  std::optional<SchemaInfo> schema;
  // Pattern consumers: how often the namespace is checked for new matching topics.
  std::chrono::milliseconds pattern_auto_discovery_period{60'000};
  // Acknowledgements are grouped: sent together at most this long after the first one
  // (0: each is sent at once), or as soon as this many individual ones are waiting.
  // Grouped acks not yet sent are sent before close, seek and redelivery requests.
  std::chrono::milliseconds ack_grouping_time{100};
  int ack_grouping_max_size = 1000;
};

class ConsumerBase;  // internal

class Consumer {
 public:
  Consumer() = default;  // a closed consumer; use Client::subscribe

  // Waits for the next message (bounded only by close()).
  Result<Message> receive();
  // Waits at most `timeout`; kTimeout when nothing came.
  Result<Message> receive(std::chrono::milliseconds timeout);
  // Up to batch_receive_policy's limits, waiting at most its timeout (may return none).
  Result<std::vector<Message>> batch_receive();

  Status acknowledge(const Message& message);
  Status acknowledge(const MessageId& id);
  // Everything up to and including `id` (Exclusive and Failover only).
  Status acknowledge_cumulative(const Message& message);
  Status acknowledge_cumulative(const MessageId& id);
  // Redelivered after negative_ack_redelivery_delay.
  void negative_acknowledge(const Message& message);
  void negative_acknowledge(const MessageId& id);
  // Asks the broker to redeliver every unacknowledged message now.
  void redeliver_unacknowledged_messages();

  // Moves the subscription (every consumer of it) to a message id, or to the first message
  // published at or after `publish_time_ms`.
  Status seek(const MessageId& id);
  Status seek(uint64_t publish_time_ms);

  Status unsubscribe();
  Status close();

  // The last message id of the topic (GET_LAST_MESSAGE_ID); single topics only.
  Result<MessageId> get_last_message_id();
  bool has_reached_end_of_topic() const;
  // Failover: whether this consumer is the active one (from ACTIVE_CONSUMER_CHANGE).
  bool is_active() const;
  bool connected() const;

  const std::string& topic() const;
  const std::string& subscription() const;
  bool valid() const { return impl_ != nullptr; }

 private:
  friend class Client;
  friend class Reader;
  friend struct ConsumerAccess;
  explicit Consumer(std::shared_ptr<ConsumerBase> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<ConsumerBase> impl_;
};

}  // namespace magnetar::client
