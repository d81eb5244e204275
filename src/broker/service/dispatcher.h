#pragma once
// Dispatch of a subscription's entries to its consumers: one dispatcher per subscription
// kind (Exclusive, Failover, Shared, Key_Shared; make_dispatcher()), over a common loop that
// reads from the cursor while consumers have permits, sends redeliveries first, and asks the
// kind which consumer gets each entry.
//
// Threading: on the topic's loop (the executor given), like the subscription that owns it.
// Lifetime: a running dispatch loop keeps the dispatcher (and, through the cursor, the
// managed ledger) alive until it ends; close() ends it at the next wait.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "broker/service/consumer.h"
#include "broker/service/delayed_delivery.h"
#include "broker/service/dispatch_cursor.h"
#include "broker/service/dispatch_rate.h"
#include "broker/service/entry_metadata.h"
#include "common/asio.h"
#include "common/gate.h"
#include "common/logging.h"
#include "common/status.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::broker {

using SubType = wire::CommandSubscribe::SubType;

struct DispatchOptions {
  int read_batch_size = 100;  // entries per cursor read (managedLedger read batch)
  // maxUnackedMessagesPerConsumer (Shared, Key_Shared): a consumer at the limit gets
  // nothing more until its unacknowledged messages fall to half of it. 0: no limit.
  int64_t max_unacked_messages_per_consumer = 0;
  // A failed cursor read is retried after an exponential delay (common/backoff.h).
  std::chrono::milliseconds read_retry_initial{100};
  std::chrono::milliseconds read_retry_max{5000};
  // Failover: the topic's partition index (-1: not a partition) chooses the active consumer.
  int partition_index = -1;
  // The dispatch rate limits obeyed (the topic's and the subscription's): each read asks at
  // most what they allow, waiting while one allows nothing; what was sent is charged.
  Throttle throttle;
  bool throttle_batches_as_one = false;  // dispatchThrottlingOnBatchMessageEnabled
  // Delayed delivery (Shared kinds): the topic's policy as it is now (read at each entry
  // that asks for a delay; unset: the defaults), and the broker's tracker settings.
  std::function<DelayedDeliveryPolicy()> delayed_delivery;
  DelayedDeliveryTracker::Options delayed_tracker;
  DelayedDeliveryTracker::Clock wall_clock = wall_clock_ms;
};

class Dispatcher : public std::enable_shared_from_this<Dispatcher> {
 public:
  // `gate`: the broker's task group, which every dispatch loop joins; outlives the dispatcher.
  Dispatcher(Executor executor, Gate& gate, std::shared_ptr<DispatchCursor> cursor,
             DispatchOptions options, log::Logger log);
  virtual ~Dispatcher() = default;
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  virtual SubType type() const = 0;
  const std::vector<std::shared_ptr<Consumer>>& consumers() const { return consumers_; }

  // Errors: kConsumerBusy (Exclusive taken), kConsumerAssignError (Key_Shared sticky ranges).
  Status add_consumer(const std::shared_ptr<Consumer>& consumer);
  // What it was sent and did not acknowledge goes to the others (Shared kinds), or the
  // cursor goes back to the first unacknowledged entry (Exclusive, Failover). False when
  // no such consumer.
  bool remove_consumer(uint64_t consumer_id, const ConsumerSink* owner);
  std::shared_ptr<Consumer> find_consumer(uint64_t consumer_id, const ConsumerSink* owner) const;
  void flow(const std::shared_ptr<Consumer>& consumer, uint32_t permits);

  // Acknowledgements, as the subscription receives them (before the cursor stores them).
  // kNotAllowed: cumulative acknowledgement on a Shared kind.
  Status check_cumulative_ack() const;
  void acknowledged_upto(mledger::Position upto);
  void acknowledged(const std::vector<mledger::Position>& positions);
  // What the consumer was sent and did not acknowledge goes out again (Shared kinds: the
  // listed positions only, or all when none are listed).
  void redeliver(const std::shared_ptr<Consumer>& consumer,
                 std::vector<mledger::Position> positions);
  // The cursor was reset: nothing sent before counts as pending any more.
  void forget_sent();

  // Wakes dispatch (new entries or permits).
  void trigger();
  // As trigger(), also ending a wait for new entries (after a rewind or redeliveries).
  void restart();
  // Disconnects every consumer (CLOSE_CONSUMER); they may come back.
  void disconnect_all();
  // disconnect_all() for good: no dispatch starts again.
  void close();
  // A dispatcher of another kind replaces `previous` (the subscription's type changed while
  // it had no consumers): what waits for redelivery carries over, `previous` closes, and
  // while its dispatch loop still runs (a read in flight when the last consumer left) this
  // one starts none: what that loop still reads or holds comes over when it ends, and only
  // then does this one dispatch, so the two never read the cursor at once.
  void take_over_from(Dispatcher& previous);
  // Called for every entry sent (messages, bytes), for the subscription's counters.
  void set_on_sent(std::function<void(int, int64_t)> on_sent) { on_sent_ = std::move(on_sent); }
  // Called for every server marker read (entry, marker type) instead of sending it: markers
  // never reach consumers; the subscription acknowledges them.
  void set_on_marker(std::function<void(const mledger::Entry&, int32_t)> on_marker) {
    on_marker_ = std::move(on_marker);
  }
  int64_t unacked_messages() const;
  // Messages held until their delivery time (Pulsar's msgDelayed), after forgetting those
  // at or before `mark_delete` (acknowledged since, by a skip, clear or expiry).
  int64_t delayed_messages(mledger::Position mark_delete);

 protected:
  // --- What each kind decides ---
  virtual Status check_join(const Consumer& consumer) const;
  virtual void joined(const std::shared_ptr<Consumer>& consumer) {}
  virtual void left(const std::shared_ptr<Consumer>& consumer) = 0;
  virtual int64_t available_permits() const = 0;
  // The consumer for an entry now, or null when none can take it.
  virtual std::shared_ptr<Consumer> target_for(const EntryInfo& info) = 0;
  // An entry no consumer can take now: true to go on with the batch (it waits for a
  // redelivery), false to stop (the cursor goes back to it).
  virtual bool hold(const mledger::Entry& entry) = 0;
  virtual void redeliver_pending(const std::shared_ptr<Consumer>& consumer,
                                 std::vector<mledger::Position> positions) = 0;
  virtual bool allows_cumulative_ack() const = 0;
  virtual bool limits_unacked() const { return false; }
  // Whether messages wait for their deliver_at_time (Shared kinds; Pulsar delivers them at
  // once to Exclusive and Failover subscriptions).
  virtual bool delays_delivery() const { return false; }

  // --- Shared by the kinds ---
  bool can_receive(const Consumer& c) const { return c.permits > 0 && !c.blocked; }
  // Queues a sent entry to go out again, counting the redelivery.
  void mark_for_redelivery(mledger::Position p);
  void update_blocked(Consumer& consumer);

  const Executor executor_;
  Gate& gate_;
  const std::shared_ptr<DispatchCursor> cursor_;
  const DispatchOptions options_;
  log::Logger log_;
  std::vector<std::shared_ptr<Consumer>> consumers_;
  std::set<mledger::Position> to_redeliver_;            // sent again before new entries
  std::map<mledger::Position, uint32_t> redeliveries_;  // redelivery counts

 private:
  Task<void> dispatch_loop();
  Task<std::vector<mledger::Entry>> read_redeliveries(int wanted);
  // How many entries the rate limits let the next read ask for, at most `wanted`, after
  // waiting for them if they allow none now.
  Task<int> throttled(int wanted);
  void send_to(const std::shared_ptr<Consumer>& consumer, const mledger::Entry& entry,
               int messages);
  // Whether the entry at `p` is held until `deliver_at_ms` (delayed_delivery.h).
  bool held_until_due(mledger::Position p, int64_t deliver_at_ms);
  // The tracker's due messages join the redeliveries (at most `max`). True when reading
  // should pause instead (fixed delays: nothing read now could be due before the first).
  bool take_due_or_pause(int max);
  void arm_delay_timer(std::optional<std::chrono::milliseconds> after);
  // What the tracker holds goes to `next`'s redeliveries (a dispatcher of another kind takes
  // over); it is held again there if still not due and the kind delays.
  void move_delayed_to(Dispatcher& next);

  // Hands what waits for redelivery to the successor (take_over_from) and lets it dispatch.
  void hand_over();

  bool dispatching_ = false;
  bool closed_ = false;
  bool waiting_for_predecessor_ = false;  // its dispatch loop still runs
  std::weak_ptr<Dispatcher> successor_;
  std::function<void(int, int64_t)> on_sent_;
  std::function<void(const mledger::Entry&, int32_t)> on_marker_;
  std::unique_ptr<DelayedDeliveryTracker> delayed_;  // made by the first delayed entry
  std::unique_ptr<asio::steady_timer> delay_timer_;  // its wake-up
};

std::shared_ptr<Dispatcher> make_dispatcher(SubType type, Executor executor, Gate& gate,
                                            std::shared_ptr<DispatchCursor> cursor,
                                            DispatchOptions options, log::Logger log);

// The kinds (one file each).
using DispatcherFactory = std::shared_ptr<Dispatcher> (*)(Executor, Gate&,
                                                          std::shared_ptr<DispatchCursor>,
                                                          DispatchOptions, log::Logger);
std::shared_ptr<Dispatcher> make_exclusive_dispatcher(Executor, Gate&,
                                                      std::shared_ptr<DispatchCursor>,
                                                      DispatchOptions, log::Logger);
std::shared_ptr<Dispatcher> make_failover_dispatcher(Executor, Gate&,
                                                     std::shared_ptr<DispatchCursor>,
                                                     DispatchOptions, log::Logger);
std::shared_ptr<Dispatcher> make_shared_dispatcher(Executor, Gate&, std::shared_ptr<DispatchCursor>,
                                                   DispatchOptions, log::Logger);
std::shared_ptr<Dispatcher> make_key_shared_dispatcher(Executor, Gate&,
                                                       std::shared_ptr<DispatchCursor>,
                                                       DispatchOptions, log::Logger);

}  // namespace magnetar::broker
