#pragma once
// A consumer attached to a subscription. Lives on the topic's loop; its dispatch state
// (permits, what it was sent and not acknowledged) belongs to the subscription's
// dispatcher, which alone changes it there.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "broker/service/consumer_sink.h"
#include "broker/service/rates.h"
#include "mledger/position.h"

namespace magnetar::broker {

class Consumer {
 public:
  // `sink`: the connection it came on (kept weakly: the consumer never keeps it open).
  // `partition`: the topic's partition index, -1 for a non-partitioned topic; it goes in the
  // message ids the consumer is sent, as Pulsar's do.
  Consumer(const std::shared_ptr<ConsumerSink>& sink, uint64_t id, std::string name, int priority,
           int partition = -1);
  uint64_t id() const { return id_; }
  int partition() const { return partition_; }
  const std::string& name() const { return name_; }
  int priority() const { return priority_; }
  // Null once the connection is gone.
  std::shared_ptr<ConsumerSink> sink() const { return sink_.lock(); }
  // The connection's identity, valid for comparisons after it is gone.
  const ConsumerSink* owner() const { return owner_; }
  nlohmann::json stats() const;

  // Reads the compacted view of the topic (Exclusive and Failover only), starting at the
  // earliest message (a new subscription at Earliest, a reader at MessageId.earliest).
  bool read_compacted = false;
  bool starts_at_earliest = false;

  // --- Dispatch state (the dispatcher's) ---
  int64_t permits = 0;
  // Entries sent and not yet acknowledged, with the number of messages each holds
  // (Shared/Key_Shared: redelivered to the others when the consumer leaves).
  std::map<mledger::Position, int> pending;
  int64_t unacked_messages = 0;
  bool blocked = false;  // maxUnackedMessagesPerConsumer reached (Shared, Key_Shared)
  // Key_Shared STICKY: the hash ranges (inclusive, within [0, 65535]) it asked for.
  std::vector<std::pair<int, int>> sticky_ranges;
  int64_t msgs_out = 0;
  int64_t bytes_out = 0;
  int64_t msgs_redelivered = 0;
  RateMeter out_rate;         // msgs_out / bytes_out over the last stats period
  RateMeter redeliver_rate;   // msgs_redelivered

 private:
  std::weak_ptr<ConsumerSink> sink_;
  const ConsumerSink* owner_;
  uint64_t id_;
  std::string name_;
  int priority_;
  int partition_;
  int64_t connected_since_ms_;
};

}  // namespace magnetar::broker
