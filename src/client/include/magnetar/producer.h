#pragma once
// Producer: publishes messages to a topic (or to the partitions of a partitioned topic).
//
// Messages are queued until the broker acknowledges them; after a connection loss the
// producer reconnects by itself and re-sends every pending message in order with its
// original sequence id (broker deduplication then drops what was stored already).
//
// Thread-safety: every method may be called from any thread. Callbacks of send_async run on
// the client's IO threads: keep them short and never block in them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "magnetar/message.h"

namespace magnetar::client {

enum class CompressionType { kNone = 0, kLz4 = 1, kZlib = 2, kZstd = 3, kSnappy = 4 };

enum class ProducerAccessMode {
  kShared = 0,
  kExclusive = 1,
  kWaitForExclusive = 2,
  kExclusiveWithFencing = 3
};

// How a message without a key picks a partition.
enum class RoutingMode {
  kRoundRobin,       // rotate among partitions, switching at batch boundaries
  kSinglePartition,  // one partition, picked at random when the producer is created
};

// How a key picks a partition (and what Pulsar's clients agree on).
enum class HashingScheme {
  kJavaStringHash,  // Java's String.hashCode over the key's UTF-16 code units (Pulsar's default)
  kMurmur3_32Hash,  // Murmur3 x86_32, seed 0, over the key's bytes
};

struct ProducerOptions {
  std::string producer_name;  // empty: the broker assigns one
  std::map<std::string, std::string> properties;
  std::chrono::milliseconds send_timeout{30'000};  // 0: never time out
  int max_pending_messages = 1000;                 // 0: unbounded
  bool block_if_queue_full = false;                // else send fails with kProducerQueueFull
  bool batching_enabled = true;
  int batching_max_messages = 1000;
  size_t batching_max_bytes = 128 * 1024;
  std::chrono::milliseconds batching_max_delay{10};
  CompressionType compression = CompressionType::kNone;
  ProducerAccessMode access_mode = ProducerAccessMode::kShared;
  // The first sequence id is this + 1; unset: the broker's last stored id + 1 (or 0).
  std::optional<int64_t> initial_sequence_id;
  RoutingMode routing_mode = RoutingMode::kRoundRobin;
  HashingScheme hashing_scheme = HashingScheme::kJavaStringHash;
  // Messages larger than the broker's limit are split into chunks (batching must be off).
  bool chunking_enabled = false;
  // Registered with the topic on creation (an incompatible one fails it); unset: bytes.
  std::optional<SchemaInfo> schema;
};

using SendCallback = std::function<void(Result<MessageId>)>;

class ProducerBase;  // internal

class Producer {
 public:
  Producer() = default;  // a closed producer; use Client::create_producer

  // Sends and waits for the broker's receipt (bounded by the send timeout).
  Result<MessageId> send(Message message);
  // Queues the message; `callback` gets the id or the error exactly once.
  void send_async(Message message, SendCallback callback);
  // Sends any batch being built and waits until every message queued before now is
  // acknowledged or failed.
  Status flush();
  // Flushes, then closes the producer on the broker. Later sends fail with kAlreadyClosed.
  Status close();

  const std::string& topic() const;
  // The producer's name (assigned by the broker unless given).
  std::string name() const;
  // The sequence id of the last message acknowledged by the broker (-1: none yet).
  int64_t last_sequence_id() const;
  bool connected() const;
  bool valid() const { return impl_ != nullptr; }

 private:
  friend class Client;
  explicit Producer(std::shared_ptr<ProducerBase> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<ProducerBase> impl_;
};

// The partition Pulsar's clients pick for `key` among `partitions` with `scheme`
// (exposed for tests and for tools that must agree with other clients).
int partition_for_key(std::string_view key, int partitions, HashingScheme scheme);
int32_t java_string_hash(std::string_view utf8);
uint32_t murmur3_32(std::string_view bytes, uint32_t seed = 0);

}  // namespace magnetar::client
