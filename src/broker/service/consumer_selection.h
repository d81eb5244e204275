#pragma once
// Which consumer of a subscription gets a message, as every dispatcher of a kind decides it
// (persistent: dispatcher.h; non-persistent: non_persistent_subscription.h):
// - Failover: the active consumer, by priority level then name, on a partition the one at the
//   partition's index in that order; every consumer hears whether it is active.
// - Key_Shared: every key (ordering key, else partition key) goes to one consumer, by the
//   Murmur3 hash of the key in [0, 65536). Consumers either ask for fixed ranges (STICKY) or
//   share the rest by auto-split (Pulsar's HashRangeAutoSplitStickyKeyConsumerSelector): the
//   first consumer owns [0, 65535]; each consumer that joins takes the lower half of the
//   largest range, so keys move only from the consumer whose range was split.
//
// Threading: on the topic's loop, like the dispatcher that holds them.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/service/consumer.h"
#include "common/status.h"

namespace magnetar::broker {

using Consumers = std::vector<std::shared_ptr<Consumer>>;

// Failover's active consumer (null when there is none). `partition`: the topic's partition
// index, -1 when it is not a partition.
std::shared_ptr<Consumer> failover_active(const Consumers& consumers, int partition);

// Tells a Failover subscription's consumers which of them is active (ACTIVE_CONSUMER_CHANGE).
class ActiveConsumerNotifier {
 public:
  // After a consumer joined or left: when the active consumer changed, every consumer hears
  // it and the result is true; else only the newest (it learns it is on standby).
  bool notify(const Consumers& consumers, const std::shared_ptr<Consumer>& active);
  // Whether a consumer was active before (a change then moves delivery to another one).
  bool had_active() const { return last_ != nullptr; }

 private:
  std::shared_ptr<Consumer> last_;
};

class KeySharedRanges {
 public:
  static constexpr int kHashSlots = 65536;
  // Sticky ranges must be valid and not overlap another consumer's. Error:
  // kConsumerAssignError.
  static Status check_join(const Consumer& consumer, const Consumers& others);
  void joined(const std::shared_ptr<Consumer>& consumer);
  // Each auto-split range of the consumer that left joins the range after it (or before it,
  // at the end).
  void left(const std::shared_ptr<Consumer>& consumer);
  // The consumer of `key` (null when none owns its slot).
  std::shared_ptr<Consumer> consumer_for(const std::string& key, const Consumers& consumers) const;

 private:
  // Auto-split ranges: range end (inclusive) -> owner; a range starts after the previous end.
  std::map<int, std::shared_ptr<Consumer>> ranges_;
};

}  // namespace magnetar::broker
