#pragma once
// What topics and subscriptions need of the client connection a producer or consumer came
// on. The wire room's Connection implements both; tests implement them with fakes. The
// service room never sees a frame or a socket: it calls these, and the connection encodes.
//
// Threading: called on the topic's loop; implementations hop to their own loop and keep the
// order of calls. A sink whose connection closed ignores every call.

#include <chrono>
#include <cstdint>
#include <string>

#include "common/buffer.h"
#include "mledger/position.h"

namespace magnetar::broker {

class ConsumerSink {
 public:
  virtual ~ConsumerSink() = default;
  // One stored entry for `consumer_id`, sent as it is stored (not copied); `partition` is the
  // topic's partition index (-1: not a partition), carried in the message id.
  virtual void send_message(uint64_t consumer_id, mledger::Position position, int32_t partition,
                            const Buffer& entry, uint32_t redelivery_count) = 0;
  // The consumer is dropped (the client reconnects); the sink forgets it.
  virtual void close_consumer(uint64_t consumer_id) = 0;
  virtual void send_reached_end_of_topic(uint64_t consumer_id) = 0;
  virtual void send_active_consumer_change(uint64_t consumer_id, bool active) = 0;
  // The client's address and version (CONNECT's client_version), for stats.
  virtual const std::string& remote() const = 0;
  virtual const std::string& client_version() const = 0;
};

class ProducerSink {
 public:
  virtual ~ProducerSink() = default;
  // The producer is dropped (the client reconnects); the sink forgets it.
  virtual void close_producer(uint64_t producer_id) = 0;
  // Over the topic's publish rate: the connection is not read for `pause` (callable from
  // any loop).
  virtual void throttle_reading(std::chrono::steady_clock::duration pause) = 0;
  virtual const std::string& remote() const = 0;
  virtual const std::string& client_version() const = 0;
};

}  // namespace magnetar::broker
