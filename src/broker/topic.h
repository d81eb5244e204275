#pragma once
// Persistent topics: producers appending to the topic's managed ledger, subscriptions
// (a cursor each) dispatching entries to their consumers.
//
// Threading: a topic, its producers, subscriptions and consumers live on the topic's event
// loop (PersistentTopic::executor()); connections post their commands there, and frames
// for consumers go out through Connection::write, which hops to the connection's loop.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/broker_metrics.h"
#include "common/asio.h"
#include "common/buffer.h"
#include "common/logging.h"
#include "mledger/managed_ledger.h"
#include "proto/pulsar_api.pb.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

class Connection;
class PersistentTopic;
class Subscription;

using mledger::Position;
using SubType = wire::CommandSubscribe::SubType;

// A server-side error as the protocol reports it.
struct ServerFailure {
  wire::ServerError error;
  std::string message;
};

class Producer {
 public:
  Producer(std::shared_ptr<Connection> cnx, uint64_t id, std::string name,
           wire::ProducerAccessMode mode);
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  wire::ProducerAccessMode access_mode() const { return mode_; }
  std::shared_ptr<Connection> connection() const { return cnx_.lock(); }
  nlohmann::json stats() const;

  int64_t msgs_in = 0;
  int64_t bytes_in = 0;

 private:
  std::weak_ptr<Connection> cnx_;
  uint64_t id_;
  std::string name_;
  wire::ProducerAccessMode mode_;
  int64_t connected_since_ms_;
};

class Consumer {
 public:
  Consumer(std::shared_ptr<Connection> cnx, uint64_t id, std::string name, int priority);
  // Key_Shared STICKY: the hash ranges (inclusive, within [0, 65535]) this consumer asked for.
  void set_sticky_ranges(std::vector<std::pair<int, int>> ranges) {
    sticky_ranges_ = std::move(ranges);
  }
  int64_t unacked_messages() const { return unacked_messages_; }
  bool blocked() const { return blocked_; }
  int64_t msgs_out() const { return msgs_out_; }
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  int priority() const { return priority_; }
  std::shared_ptr<Connection> connection() const { return cnx_.lock(); }
  int64_t permits() const { return permits_; }
  nlohmann::json stats() const;

 private:
  friend class Subscription;
  std::weak_ptr<Connection> cnx_;
  uint64_t id_;
  std::string name_;
  int priority_;
  int64_t permits_ = 0;
  // Entries sent and not yet acknowledged (Shared/Key_Shared: redelivered when the consumer
  // leaves), with the number of messages each holds.
  std::map<Position, int> pending_;
  int64_t unacked_messages_ = 0;
  bool blocked_ = false;  // maxUnackedMessagesPerConsumer reached (Shared, Key_Shared)
  std::vector<std::pair<int, int>> sticky_ranges_;
  int64_t msgs_out_ = 0;
  int64_t bytes_out_ = 0;
  int64_t connected_since_ms_;
};

class Subscription : public std::enable_shared_from_this<Subscription> {
 public:
  Subscription(PersistentTopic& topic, std::string name, SubType type,
               std::shared_ptr<mledger::ManagedCursor> cursor, bool durable);
  const std::string& name() const { return name_; }
  SubType type() const { return type_; }
  bool durable() const { return durable_; }
  mledger::ManagedCursor& cursor() { return *cursor_; }
  std::shared_ptr<mledger::ManagedCursor> cursor_ptr() const { return cursor_; }
  const std::vector<std::shared_ptr<Consumer>>& consumers() const { return consumers_; }

  // ConsumerBusy / type mismatch as a failure; OK otherwise.
  std::optional<ServerFailure> add_consumer(const std::shared_ptr<Consumer>& consumer,
                                            SubType type);
  void remove_consumer(uint64_t consumer_id, const Connection* cnx);
  std::shared_ptr<Consumer> find_consumer(uint64_t consumer_id, const Connection* cnx) const;
  void flow(const std::shared_ptr<Consumer>& consumer, uint32_t permits);
  Task<std::optional<ServerFailure>> acknowledge(std::shared_ptr<Consumer> consumer,
                                                 wire::CommandAck ack);
  // Everything the consumer was sent and did not acknowledge goes out again (Shared: the
  // listed ids only, or all when none are listed).
  void redeliver(const std::shared_ptr<Consumer>& consumer, std::vector<Position> positions);
  Task<std::optional<ServerFailure>> reset(Position read_from);
  // Wakes dispatch (new entries or permits).
  void trigger();
  // As trigger(), also ending a wait for new entries (after a rewind or redeliveries).
  void restart_dispatch();
  // Disconnects every consumer (CLOSE_CONSUMER); they may come back (after a seek).
  void disconnect_all();
  // disconnect_all() for good: the subscription is going away (topic closed, unsubscribed),
  // no dispatch starts again.
  void close();
  nlohmann::json stats() const;
  void refresh_metrics();
  void remove_metrics();
  int64_t msgs_out() const { return msgs_out_; }
  int64_t bytes_out() const { return bytes_out_; }

 private:
  Task<void> dispatch_loop();
  std::shared_ptr<Consumer> active_consumer() const;  // Exclusive/Failover
  // Key_Shared: the consumer owning a hash slot in [0, 65536), or null.
  std::shared_ptr<Consumer> consumer_for_slot(uint32_t slot) const;
  void assign_key_ranges(const std::shared_ptr<Consumer>& joined);
  void release_key_ranges(const std::shared_ptr<Consumer>& left);
  void update_blocked(Consumer& consumer);
  bool can_receive(const Consumer& consumer) const;
  void send_to(const std::shared_ptr<Consumer>& consumer, const mledger::Entry& entry,
               int messages);
  void notify_active_consumer();
  int64_t available_permits() const;

  PersistentTopic& topic_;
  const std::string name_;
  SubType type_;
  std::shared_ptr<mledger::ManagedCursor> cursor_;
  const bool durable_;
  log::Logger log_;
  std::vector<std::shared_ptr<Consumer>> consumers_;
  bool dispatching_ = false;
  bool closed_ = false;  // disconnect_all() ran: the subscription is going away
  size_t round_robin_ = 0;
  std::set<Position> to_redeliver_;            // Shared: sent again before new entries
  std::map<Position, uint32_t> redeliveries_;  // redelivery counts
  std::shared_ptr<Consumer> last_active_;
  // Key_Shared: range end (inclusive) -> owner; the range starts after the previous end.
  std::map<int, std::shared_ptr<Consumer>> key_ranges_;
  int64_t msgs_out_ = 0;
  int64_t bytes_out_ = 0;
  SubscriptionMetrics metrics_;
};

class Broker;

class PersistentTopic : public std::enable_shared_from_this<PersistentTopic> {
 public:
  // `executor`: the event loop that owns the topic (and its managed ledger).
  PersistentTopic(Broker& broker, Executor executor, protocol::TopicName name,
                  std::shared_ptr<mledger::ManagedLedger> ml);
  const Executor& executor() const { return executor_; }
  const protocol::TopicName& name() const { return name_; }
  mledger::ManagedLedger& ledger() { return *ml_; }
  Broker& broker() { return broker_; }

  // Adds a producer per its access mode. WaitForExclusive producers that cannot be
  // exclusive yet are queued: `promoted` runs when they become the topic's producer.
  enum class AddResult { kAdded, kQueued, kFailed };  // kFailed: *failure says why
  AddResult add_producer(const std::shared_ptr<Producer>& producer, std::function<void()> promoted,
                         ServerFailure* failure);
  void remove_producer(uint64_t producer_id, const Connection* cnx);

  // --- Deduplication (brokerDeduplicationEnabled or the namespace policy) ---
  enum class Duplicate { kNo, kYes, kUnknown };
  bool deduplication_enabled() const { return dedup_cursor_ != nullptr; }
  // Classifies a send by its producer's sequence ids; kNo also records it as pushed.
  Duplicate check_duplicate(const std::string& producer, int64_t sequence_id, int64_t highest);
  // Called when the send's entry is stored.
  void persisted(const std::string& producer, int64_t highest, Position position);
  int64_t last_sequence_id(const std::string& producer) const;
  // Opens the `pulsar.dedup` cursor and rebuilds the sequence ids from its snapshot plus
  // the entries after it.
  Task<Status> enable_deduplication();
  static constexpr const char* kDedupCursor = "pulsar.dedup";
  // Stores one entry (metadata + payload as received); `done` gets its position.
  void publish(const std::shared_ptr<Producer>& producer, Buffer entry, int messages,
               std::function<void(Result<Position>)> done);

  Task<Result<std::shared_ptr<Subscription>>> subscribe(const std::string& name, SubType type,
                                                        bool durable,
                                                        wire::CommandSubscribe::InitialPosition,
                                                        std::optional<Position> start);
  Task<std::optional<ServerFailure>> unsubscribe(const std::string& name, bool force);
  std::shared_ptr<Subscription> find_subscription(const std::string& name) const;
  void remove_non_durable(const std::string& name);
  // --- Namespace policies applied to the topic ---
  struct Policies {
    int64_t message_ttl_seconds = 0;   // 0: none
    int64_t backlog_quota_bytes = -1;  // -1: none
    std::string backlog_quota_policy = "producer_request_hold";
  };
  void set_policies(Policies policies) { policies_ = std::move(policies); }
  const Policies& policies() const { return policies_; }
  bool backlog_quota_exceeded() const;
  // Moves subscriptions past messages older than the TTL.
  Task<void> expire_messages();
  // Moves one subscription (or every one, when `only` is empty) past the messages published
  // more than `seconds` ago; returns how many subscriptions moved.
  Task<int> expire_messages(int64_t seconds, std::string only);
  std::vector<std::string> subscription_names() const;
  bool has_clients() const;
  // Applies the quota policy when the backlog is over it.
  Task<void> enforce_backlog_quota();

  // Closes producers and consumers (they reconnect) and the managed ledger.
  Task<void> close();
  // Counters for load reports.
  struct Totals {
    int64_t msgs_in = 0, bytes_in = 0, msgs_out = 0, bytes_out = 0;
    int64_t producers = 0, consumers = 0;
  };
  Totals totals() const;
  nlohmann::json stats() const;
  // Sets the gauges (storage, backlog, counts) of the topic and its subscriptions.
  void refresh_metrics();

 private:
  void on_entries_added();

  Broker& broker_;
  const Executor executor_;
  const protocol::TopicName name_;
  std::shared_ptr<mledger::ManagedLedger> ml_;
  log::Logger log_;
  std::map<std::pair<const Connection*, uint64_t>, std::shared_ptr<Producer>> producers_;
  struct WaitingProducer {
    std::shared_ptr<Producer> producer;
    std::function<void()> promoted;
  };
  std::deque<WaitingProducer> waiting_exclusive_;
  std::shared_ptr<mledger::ManagedCursor> dedup_cursor_;
  std::map<std::string, int64_t> pushed_;     // highest sequence id accepted, per producer
  std::map<std::string, int64_t> persisted_;  // highest sequence id stored, per producer
  int64_t persisted_since_snapshot_ = 0;
  Policies policies_;
  TopicMetrics metrics_;
  std::map<std::string, std::shared_ptr<Subscription>> subscriptions_;
  int64_t msgs_in_ = 0;
  int64_t bytes_in_ = 0;
};

// Whether a stored entry's message was published before `cutoff_ms` (an unreadable entry
// counts as old, so expiry never stalls on it).
bool published_before(const mledger::Entry& entry, uint64_t cutoff_ms);

// ServerError for a managed-ledger failure.
ServerFailure to_server_failure(const Status& status);

}  // namespace magnetar::broker
