#pragma once
// A producer of already-encoded messages, for the broker's geo-replicators (not part of the
// public API): each send is a stored entry's MessageMetadata and payload, sent unchanged —
// producer name, sequence id, publish time, key, properties, compression and batching stay
// the original producer's — under a SEND sequence id of this producer's own, so receipts
// match in order and pending sends are re-sent in order after a reconnection, as for any
// producer. No batching, compression or chunking of its own.
//
// It never waits to connect: start() returns at once and the producer connects in the
// background, retrying for as long as it takes; sends queue until then (bounded by
// max_pending). Only an error that ends a producer for good (the topic terminated or deleted,
// a refusal: not allowed, fenced) fails what is pending, and every later send.
//
// Threading: every call may come from any thread; send callbacks run on the client's event
// loop and must not block.

#include <memory>
#include <string>

#include "common/buffer.h"
#include "common/status.h"
#include "magnetar/client.h"
#include "magnetar/producer.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::client {

class ProducerImpl;

class RawProducer {
 public:
  struct Options {
    std::string name;        // the producer name the broker sees ("pulsar.repl.a-->b")
    int max_pending = 1000;  // sends in flight; more fail at once with kProducerQueueFull
  };

  // A producer on `topic` (non-partitioned, or one partition by its full name), connecting
  // in the background. Fails only when the client is closed.
  static Result<std::shared_ptr<RawProducer>> start(Client& client, std::string topic,
                                                    Options options);
  ~RawProducer();

  // Sends one entry: `metadata` as stored (num_messages_in_batch counts its messages) and
  // its payload. `done` gets the target's message id, or the failure (closed, queue full).
  void send(wire::MessageMetadata metadata, Buffer payload, SendCallback done);
  bool connected() const;
  // Closed for good (close_async, or an error that ends the producer).
  bool closed() const;
  // Fails what is pending and closes the producer on the broker, in the background.
  void close_async();

 private:
  explicit RawProducer(std::shared_ptr<ProducerImpl> impl);
  std::shared_ptr<ProducerImpl> impl_;
};

}  // namespace magnetar::client
