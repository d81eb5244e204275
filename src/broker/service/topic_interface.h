#pragma once
// What a client connection does with a topic of either kind (persistent: topic.h,
// non-persistent: non_persistent_topic.h): find its loop and policies, add and remove
// producers, publish. What only one kind has (cursors, seeks, subscriptions of its own kind)
// the connection asks of that kind directly.
//
// Threading: every call on the topic's loop (executor()).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "broker/service/policies.h"
#include "broker/service/producer.h"
#include "broker/service/topic_producers.h"
#include "common/asio.h"
#include "common/buffer.h"
#include "common/status.h"
#include "mledger/position.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

// One SEND as the topic needs it.
struct SendInfo {
  int64_t sequence_id = 0;
  int64_t highest_sequence_id = 0;  // of a batch (0: none)
  int messages = 1;
  bool chunk_before_last = false;  // a chunk of a large message, not its last one
  // A replicator's send (producer `pulsar.repl.<source>-->...` with the source position
  // property): deduplicated by source position instead of sequence id.
  std::string replicated_from;
  std::optional<mledger::Position> source_position;
  // A server marker another cluster's replicator carries (replicated subscriptions): its type.
  int32_t marker_type = 0;
  // When the connection handled the SEND (pulsar_broker_publish_latency starts there); unset,
  // the topic starts it when it adds the entry.
  std::chrono::steady_clock::time_point received{};
};

// Counters for load reports.
struct TopicTotals {
  int64_t msgs_in = 0, bytes_in = 0, msgs_out = 0, bytes_out = 0;
  int64_t producers = 0, consumers = 0;
};

// Adds what a topic's subscriptions (either kind's: msgs_out(), bytes_out(), consumers())
// sent, and their consumers, to `t`.
template <typename Subscriptions>
void add_subscription_totals(TopicTotals& t, const Subscriptions& subscriptions) {
  for (const auto& [name, sub] : subscriptions) {
    t.msgs_out += sub->msgs_out();
    t.bytes_out += sub->bytes_out();
    t.consumers += static_cast<int64_t>(sub->consumers().size());
  }
}

class Topic {
 public:
  using Added = TopicProducers::Added;
  // The position a publish was given: nullopt for a duplicate (deduplication), or why it
  // failed.
  using Published = Result<std::optional<mledger::Position>>;

  virtual ~Topic() = default;
  virtual const Executor& executor() const = 0;
  virtual const protocol::TopicName& name() const = 0;
  virtual const TopicPolicies& policies() const = 0;
  // Adds a producer per its access mode (topic_producers.h); kQueued: `decided` runs when a
  // WaitForExclusive producer's wait ends. Errors: the kind's own, then
  // kProducerBusy, kProducerFenced.
  virtual Result<Added> add_producer(const std::shared_ptr<Producer>& producer,
                                     TopicProducers::Decided decided) = 0;
  virtual void remove_producer(uint64_t producer_id, const ProducerSink* owner) = 0;
  // Takes one entry (metadata + payload as received); `done` gets where it went.
  virtual void publish(const std::shared_ptr<Producer>& producer, Buffer entry, SendInfo send,
                       std::function<void(Published)> done) = 0;
  // Highest sequence id accepted from the producer (-1: none, or no deduplication).
  virtual int64_t last_sequence_id(const std::string& producer) const = 0;
};

}  // namespace magnetar::broker
