#pragma once
// What the service room needs of geo-replication, which sits above it
// (src/broker/replication implements both interfaces; the service never includes it).
//
// - TopicReplication: the topic registry tells it when a topic is loaded, before the topic
//   serves any client (so a replicator's cursor exists before the first message that must be
//   replicated), and before a topic closes (unload, deletion, broker stop).
// - TopicReplicators: what a topic shows of the replicators reading it (the `replication`
//   section of its stats).
//
// Threading: every call is made on the topic's loop.

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "common/asio.h"

namespace magnetar::broker {

class PersistentTopic;

class TopicReplication {
 public:
  virtual ~TopicReplication() = default;
  virtual Task<void> topic_loaded(std::shared_ptr<PersistentTopic> topic) = 0;
  virtual Task<void> topic_closing(std::shared_ptr<PersistentTopic> topic) = 0;
};

class TopicReplicators {
 public:
  virtual ~TopicReplicators() = default;
  // {"<remote cluster>": ReplicatorStats, ...}
  virtual nlohmann::json stats() const = 0;
};

}  // namespace magnetar::broker
