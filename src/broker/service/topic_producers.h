#pragma once
// The producers of a topic of either kind: who may join (a unique name, the topic's max
// producers, Pulsar's access modes: Shared, Exclusive, ExclusiveWithFencing,
// WaitForExclusive), the queue of WaitForExclusive producers and their promotion, and the
// publish rate charged to a producer's connection.
//
// Threading: on the topic's loop, like the topic that owns it.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/service/dispatch_rate.h"
#include "broker/service/producer.h"
#include "common/status.h"

namespace magnetar::broker {

class TopicProducers {
 public:
  enum class Added { kAdded, kQueued };
  using Map = std::map<std::pair<const ProducerSink*, uint64_t>, std::shared_ptr<Producer>>;

  // What becomes of a queued WaitForExclusive producer: OK when it becomes the topic's
  // producer, kProducerFenced when an ExclusiveWithFencing producer takes the topic first.
  using Decided = std::function<void(Status)>;
  // Adds a producer per its access mode. WaitForExclusive producers that cannot be exclusive
  // yet are queued (kQueued): `decided` runs once, when their wait ends.
  // `max_producers` (0: no limit) counts local producers only, not other clusters'
  // replicators; `topic` names the topic in errors. Errors: kProducerBusy, kProducerFenced.
  Result<Added> add(const std::shared_ptr<Producer>& producer, Decided decided,
                    int32_t max_producers, const std::string& topic);
  // Removes a producer (joined or queued) and promotes the next queued one when the topic
  // has none left.
  void remove(uint64_t producer_id, const ProducerSink* owner);
  // Disconnects every producer (CLOSE_PRODUCER; they may come back); with `fence_queue`, the
  // queued ones are told they were fenced.
  void disconnect_all(bool fence_queue = false);
  const Map& all() const { return producers_; }
  bool empty() const { return producers_.empty(); }
  size_t size() const { return producers_.size(); }
  size_t waiting() const { return waiting_exclusive_.size(); }

 private:
  Map producers_;
  struct WaitingProducer {
    std::shared_ptr<Producer> producer;
    Decided decided;
  };
  std::deque<WaitingProducer> waiting_exclusive_;
};

// Charges a send of `messages` and `bytes` to the topic's publish rate limit; over it, the
// producer's connection is not read until the debt is paid (Pulsar pauses it too; the send
// itself goes on).
void charge_publish(RateLimiter& limiter, const Producer& producer, int messages, int64_t bytes);

}  // namespace magnetar::broker
