#pragma once
// A subscription of a persistent topic: a cursor (durable, or in memory for readers) and
// the dispatcher of its kind, which the first consumer's type chooses (a subscription
// whose consumers all left may come back as another kind).
//
// Threading: on the topic's loop. The topic owns its subscriptions; coroutines of a
// subscription keep it and its topic alive while they run.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "broker/service/compacted_cursor.h"
#include "broker/service/dispatcher.h"
#include "broker/service/metrics.h"
#include "broker/service/rates.h"
#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker {

class PersistentTopic;

class Subscription : public std::enable_shared_from_this<Subscription> {
 public:
  // `created`: made by a SUBSCRIBE now (not recovered with the topic): a first consumer that
  // reads compacted from Earliest then also gets the compacted messages of deleted ledgers.
  Subscription(PersistentTopic& topic, std::string name, SubType type,
               std::shared_ptr<mledger::ManagedCursor> cursor, bool durable,
               bool created = false);
  ~Subscription() { *alive_ = nullptr; }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  const std::string& name() const { return name_; }
  SubType type() const { return dispatcher_->type(); }
  bool durable() const { return durable_; }
  mledger::ManagedCursor& cursor() { return *cursor_; }
  const mledger::ManagedCursor& cursor() const { return *cursor_; }
  std::shared_ptr<mledger::ManagedCursor> cursor_ptr() const { return cursor_; }
  const std::vector<std::shared_ptr<Consumer>>& consumers() const {
    return dispatcher_->consumers();
  }

  // A replicated subscription (PIP-33): its position travels to the peer clusters. Stored as
  // the cursor property pulsar.replicated.subscription (durable subscriptions only).
  bool replicated() const { return replicated_; }
  Task<Status> set_replicated(bool on);
  // A snapshot read on this subscription (a SNAPSHOT marker): the positions in the peers that
  // correspond to `local`. The newest the mark-delete passed is what an UPDATE carries.
  struct Snapshot {
    mledger::Position local;
    std::vector<std::pair<std::string, mledger::Position>> clusters;
  };
  // Keeps a snapshot (the newest replicatedSubscriptionsSnapshotMaxCachedPerSubscription).
  void cache_snapshot(Snapshot snapshot);
  // Removes and returns the newest cached snapshot at or before the mark-delete position
  // (older ones go too).
  std::optional<Snapshot> take_passed_snapshot();
  // The peers' UPDATE: the subscription is consumed up to `p` (a cumulative acknowledgement
  // whatever its type; nothing when it is already past).
  Task<Status> apply_remote_position(mledger::Position p);
  // After the mark-delete may have moved: tells the topic's replicated subscriptions.
  void position_moved();

  // Errors: kConsumerBusy (another type while consumers are connected, Exclusive taken),
  // kConsumerAssignError (Key_Shared sticky ranges).
  Status add_consumer(const std::shared_ptr<Consumer>& consumer, SubType type);
  void remove_consumer(uint64_t consumer_id, const ConsumerSink* owner);
  std::shared_ptr<Consumer> find_consumer(uint64_t consumer_id, const ConsumerSink* owner) const;
  void flow(const std::shared_ptr<Consumer>& consumer, uint32_t permits);
  // Whole entries acknowledged (cumulatively: everything up to the highest position), stored
  // on the cursor. Errors: kNotAllowed (cumulative on a Shared kind), the cursor's.
  Task<Status> acknowledge(bool cumulative, std::vector<mledger::Position> positions,
                           std::map<std::string, int64_t> properties);
  void redeliver(const std::shared_ptr<Consumer>& consumer,
                 std::vector<mledger::Position> positions);
  // Moves the cursor; what consumers were sent no longer counts.
  Task<Status> reset(mledger::Position read_from);
  // Wakes dispatch (new entries or permits).
  void trigger() { dispatcher_->trigger(); }
  // As trigger(), also ending a wait for new entries (after a rewind or redeliveries).
  void restart_dispatch() { dispatcher_->restart(); }
  // Disconnects every consumer (CLOSE_CONSUMER); they may come back (after a seek). A
  // reader's (non-durable) subscription stays, as Pulsar keeps it through a reset: its
  // consumers resubscribe without a start position and must find the cursor the seek moved.
  void disconnect_all();
  // A non-durable subscription nobody has used since `before` (its readers left after a seek
  // and never came back): the topic may drop it.
  bool abandoned(std::chrono::steady_clock::time_point before) const;
  // disconnect_all() for good: the subscription is going away (topic closed, unsubscribed).
  void close();
  nlohmann::json stats() const;
  void refresh_metrics();
  void remove_metrics();
  // Recomputes the rates of the subscription and its consumers over the last `seconds`.
  void update_rates(double seconds);
  const RateMeter& out_rate() const { return out_rate_; }
  // Entries dispatched, for the topic's pulsar_storage_read_rate.
  double entry_rate() const { return entry_rate_.msg_rate(); }
  int64_t msgs_out() const { return out_->messages; }
  int64_t bytes_out() const { return out_->bytes; }

 private:
  void use_dispatcher(SubType type);
  // A server marker read by the dispatcher: acknowledged; a SNAPSHOT cached when replicated.
  void on_marker(const mledger::Entry& entry, int32_t type);
  // The last consumer left.
  void became_empty();

  PersistentTopic& topic_;
  const std::string name_;
  std::shared_ptr<mledger::ManagedCursor> cursor_;
  const bool durable_;
  log::Logger log_;
  std::shared_ptr<CompactedDispatchCursor> dispatch_cursor_;
  bool created_;
  bool replicated_ = false;
  std::deque<Snapshot> snapshots_;  // oldest first
  std::shared_ptr<Subscription*> alive_ = std::make_shared<Subscription*>(this);
  std::shared_ptr<RateLimiter> dispatch_limiter_;  // the subscription's own rate limit
  std::shared_ptr<Dispatcher> dispatcher_;
  struct OutCounters {
    int64_t messages = 0, bytes = 0, entries = 0;
  };
  std::shared_ptr<OutCounters> out_ = std::make_shared<OutCounters>();
  SubscriptionMetrics metrics_;
  RateMeter out_rate_, entry_rate_;
  double redeliver_rate_ = 0;  // the consumers' sum
  // Since when a non-durable subscription kept by disconnect_all() has had no consumer.
  std::optional<std::chrono::steady_clock::time_point> empty_since_;
};

}  // namespace magnetar::broker
