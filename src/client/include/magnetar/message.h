#pragma once
// Message ids and messages.
//
// MessageId: (ledger, entry) is the position of one stored entry; partition and batch index
// are filled in by the client. serialize() writes exactly the bytes Pulsar's clients write
// (the protobuf encoding of MessageIdData), so ids can be stored and handed between clients.
//
// Message: a value type used both to build a message to send (the setters) and to read a
// received one (the getters). Copies are independent.

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace magnetar::client {

// A schema declared by a producer or consumer (Pulsar's SchemaInfo): the type by Pulsar's name
// ("STRING", "JSON", "AVRO", ...; "AUTO_CONSUME" for a consumer that takes any), the
// definition (the JSON text of a JSON or AVRO schema), properties. Without one: bytes.
struct SchemaInfo {
  std::string type;
  std::string definition;
  std::map<std::string, std::string> properties;
};

class MessageId {
 public:
  // The earliest id.
  MessageId() = default;
  MessageId(int64_t ledger_id, int64_t entry_id, int32_t partition = -1, int32_t batch_index = -1,
            int32_t batch_size = 0)
      : ledger_id_(ledger_id),
        entry_id_(entry_id),
        partition_(partition),
        batch_index_(batch_index),
        batch_size_(batch_size) {}

  // Before every message, and after every message.
  static MessageId earliest() { return MessageId(); }
  static MessageId latest() { return MessageId(INT64_MAX, INT64_MAX); }
  bool is_earliest() const { return ledger_id_ == -1 && entry_id_ == -1; }
  bool is_latest() const { return ledger_id_ == INT64_MAX && entry_id_ == INT64_MAX; }

  int64_t ledger_id() const { return ledger_id_; }
  int64_t entry_id() const { return entry_id_; }
  int32_t partition() const { return partition_; }
  int32_t batch_index() const { return batch_index_; }
  int32_t batch_size() const { return batch_size_; }

  // MessageIdData bytes, compatible with Pulsar's MessageId.serialize / toByteArray.
  std::string serialize() const;
  static Result<MessageId> deserialize(std::string_view bytes);
  // "ledger:entry:partition:batchIndex".
  std::string to_string() const;

  // Position order: ledger, entry, batch index (partition does not take part).
  std::strong_ordering operator<=>(const MessageId& o) const {
    if (auto c = ledger_id_ <=> o.ledger_id_; c != 0) return c;
    if (auto c = entry_id_ <=> o.entry_id_; c != 0) return c;
    return batch_index_ <=> o.batch_index_;
  }
  bool operator==(const MessageId& o) const {
    return ledger_id_ == o.ledger_id_ && entry_id_ == o.entry_id_ &&
           batch_index_ == o.batch_index_ && partition_ == o.partition_;
  }

  // For multi-topic consumers: the topic the message came from (not serialized, not compared).
  const std::string& topic() const;
  void set_topic(std::shared_ptr<const std::string> topic) { topic_ = std::move(topic); }

 private:
  int64_t ledger_id_ = -1;
  int64_t entry_id_ = -1;
  int32_t partition_ = -1;
  int32_t batch_index_ = -1;
  int32_t batch_size_ = 0;
  std::shared_ptr<const std::string> topic_;
};

class Message {
 public:
  Message() = default;
  explicit Message(std::string payload) : payload_(std::move(payload)) {}

  // ---- Building (for Producer::send) ----
  Message& set_payload(std::string payload) {
    payload_ = std::move(payload);
    return *this;
  }
  // The partition key: routes among partitions and Key_Shared consumers.
  Message& set_key(std::string key) {
    key_ = std::move(key);
    return *this;
  }
  // Overrides the key for Key_Shared ordering only.
  Message& set_ordering_key(std::string key) {
    ordering_key_ = std::move(key);
    return *this;
  }
  Message& set_property(std::string key, std::string value) {
    properties_[std::move(key)] = std::move(value);
    return *this;
  }
  Message& set_properties(std::map<std::string, std::string> properties) {
    properties_ = std::move(properties);
    return *this;
  }
  // Application event time, ms since the epoch (0: none).
  Message& set_event_time(uint64_t ms) {
    event_time_ = ms;
    return *this;
  }
  // Delayed delivery (PIP-26): not delivered before `ms` since the epoch, on Shared and
  // Key_Shared subscriptions (others get it at once). 0: at once. Sent outside batches.
  Message& set_deliver_at(uint64_t ms) {
    deliver_at_ = ms;
    return *this;
  }
  // The same, `delay` from now.
  Message& set_deliver_after(std::chrono::milliseconds delay);
  // Geo-replication: only to these clusters (empty: the namespace's clusters).
  Message& set_replicate_to(std::vector<std::string> clusters) {
    replicate_to_ = std::move(clusters);
    return *this;
  }
  // An explicit sequence id (otherwise the producer assigns the next one).
  Message& set_sequence_id(int64_t id) {
    sequence_id_ = id;
    return *this;
  }

  // ---- Reading ----
  const std::string& payload() const { return payload_; }
  std::string_view data() const { return payload_; }
  bool has_key() const { return key_.has_value(); }
  const std::string& key() const;
  bool has_ordering_key() const { return ordering_key_.has_value(); }
  const std::string& ordering_key() const;
  const std::map<std::string, std::string>& properties() const { return properties_; }
  // The property's value, or "" when absent.
  std::string property(const std::string& key) const;
  uint64_t event_time() const { return event_time_; }
  uint64_t publish_time() const { return publish_time_; }
  uint64_t deliver_at() const { return deliver_at_; }
  const std::vector<std::string>& replicate_to() const { return replicate_to_; }
  int64_t sequence_id() const { return sequence_id_; }
  const MessageId& id() const { return id_; }
  uint32_t redelivery_count() const { return redelivery_count_; }
  const std::string& topic() const { return topic_; }
  const std::string& producer_name() const { return producer_name_; }

 private:
  friend struct MessageAccess;  // the library fills the received fields

  std::string payload_;
  std::optional<std::string> key_;
  std::optional<std::string> ordering_key_;
  std::map<std::string, std::string> properties_;
  uint64_t event_time_ = 0;
  uint64_t publish_time_ = 0;
  uint64_t deliver_at_ = 0;
  std::vector<std::string> replicate_to_;
  int64_t sequence_id_ = -1;
  MessageId id_;
  uint32_t redelivery_count_ = 0;
  std::string topic_;
  std::string producer_name_;
};

}  // namespace magnetar::client
