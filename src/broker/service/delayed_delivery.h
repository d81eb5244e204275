#pragma once
// Delayed message delivery (Pulsar's PIP-26: a message's MessageMetadata.deliver_at_time):
// the policy that governs it, the publish-time rule on the longest delay (PIP-315), and the
// tracker a Shared or Key_Shared dispatcher keeps of the entries it read too early.
//
// The tracker has Pulsar's InMemoryDelayedDeliveryTracker semantics: an index of
// (delivery time -> positions) in memory only, and one wake-up at the earliest delivery
// time, never sooner than a tick after the previous one. Nothing is persisted: after a
// restart the cursor reads again from its mark-delete position and the dispatcher tracks
// anew what is still not due. Without strict delivery (isDelayedDeliveryDeliverAtTimeStrict,
// false by default as in Pulsar) a message may go out up to one tick early.
//
// Threading: the tracker lives on its dispatcher's loop (the topic's), like the dispatcher.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "broker/service/producer.h"  // wall_clock_ms(), the clock of deliver_at_time
#include "common/buffer.h"
#include "common/status.h"
#include "mledger/position.h"

namespace magnetar::broker {

// A topic's delayed delivery: the namespace's delayed_delivery_policies
// ({"active", "tickTime", "maxDeliveryDelayInMillis"}) or a topic's own fields over the
// broker's delayedDeliveryEnabled, delayedDeliveryTickTimeMillis and
// delayedDeliveryMaxDelayInMillis.
struct DelayedDeliveryPolicy {
  bool enabled = true;       // false: delayed messages are dispatched at once
  int64_t tick_ms = 1000;    // precision of the wake-ups
  int64_t max_delay_ms = 0;  // longest delay a producer may ask for; 0: no limit
};

// PIP-315: on a topic with delayed delivery on and a maximum delay, a message whose
// deliver_at_time lies more than the maximum after its publish_time is refused
// (kNotAllowed, "Exceeds max allowed delivery delay of N milliseconds"), as Pulsar refuses
// it with NotAllowedError. `entry` is the message as stored (metadata and payload).
Status check_delivery_delay(const DelayedDeliveryPolicy& policy, const Buffer& entry);

class DelayedDeliveryTracker {
 public:
  // The wall clock, milliseconds since the epoch (a seam: tests pass a fake one).
  using Clock = std::function<int64_t()>;
  // Arms the owner's one wake-up to go off after the delay (replacing an armed one), or
  // disarms it (nullopt). When it goes off the owner calls timer_fired(), then dispatches.
  using ArmTimer = std::function<void(std::optional<std::chrono::milliseconds>)>;

  struct Options {
    int64_t tick_ms = 1000;
    bool strict = false;  // isDelayedDeliveryDeliverAtTimeStrict: never a tick early
    // delayedDeliveryFixedDelayDetectionLookahead: with at least this many messages held,
    // all with delays in the order they were read, reading stops until the first is due
    // (what follows can only be due later). 0: never.
    int64_t fixed_delay_lookahead = 50000;
  };

  DelayedDeliveryTracker(Options options, Clock clock, ArmTimer arm);
  ~DelayedDeliveryTracker();
  DelayedDeliveryTracker(const DelayedDeliveryTracker&) = delete;
  DelayedDeliveryTracker& operator=(const DelayedDeliveryTracker&) = delete;

  // The policy's tick may change while messages are held.
  void set_tick(int64_t tick_ms);
  // Holds `p` until `deliver_at_ms` when that is after the cutoff (now, plus a tick unless
  // strict): true. False: it is due already (or `deliver_at_ms` < 0), deliver it now.
  bool add(mledger::Position p, int64_t deliver_at_ms);
  // Whether a held message is due. When none is, the wake-up is armed for the first.
  bool has_due();
  // Up to `max` due messages, removed from the tracker, in position order.
  std::vector<mledger::Position> take_due(size_t max);
  // Every held message, due or not, in position order; the tracker is left empty.
  std::vector<mledger::Position> take_all();
  // Acknowledged messages are held no more.
  void remove(mledger::Position p);
  void remove_upto(mledger::Position upto);
  void clear();
  size_t size() const { return times_.size(); }
  // Whether the dispatcher should read no further for now (fixed_delay_lookahead).
  bool should_pause();
  // The owner's wake-up went off.
  void timer_fired();

 private:
  int64_t cutoff() const;
  // Arms the wake-up for the first held message (Pulsar's updateTimer).
  void update_timer();
  void erase(std::map<mledger::Position, int64_t>::iterator it);

  Options options_;
  const Clock clock_;
  const ArmTimer arm_;
  std::map<int64_t, std::set<mledger::Position>> by_time_;  // delivery time -> positions
  std::map<mledger::Position, int64_t> times_;              // position -> delivery time
  int64_t armed_for_ = -1;     // the delivery time the wake-up is armed for; -1: none
  int64_t last_tick_ = 0;      // when the wake-up last went off
  int64_t highest_time_ = 0;   // the latest delivery time held (fixed-delay detection)
  bool fixed_delay_ = true;    // every message held so far came in delivery-time order
};

}  // namespace magnetar::broker
