#pragma once
// What the service room needs of geo-replication, which sits above it
// (src/broker/replication implements both interfaces; the service never includes it).
//
// - TopicReplication: the topic registry tells it when a topic is loaded, before the topic
//   serves any client (so a replicator's cursor exists before the first message that must be
//   replicated), and before a topic closes (unload, deletion, broker stop).
// - It also makes a topic exist in the shape it has here in other clusters, for the admin API
//   (a topic's own replication clusters are refused when a remote's topic has another shape).
// - TopicReplicators: what a topic shows of the replicators reading it (the `replication`
//   section of its stats).
//
// Threading: topic_loaded and topic_closing are called on the topic's loop;
// prepare_remote_topic on any event loop.

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

class PersistentTopic;

class TopicReplication {
 public:
  virtual ~TopicReplication() = default;
  virtual Task<void> topic_loaded(std::shared_ptr<PersistentTopic> topic) = 0;
  virtual Task<void> topic_closing(std::shared_ptr<PersistentTopic> topic) = 0;
  // `topic` (or its partitioned topic) in `cluster` as here: created when missing; a
  // different partition count or type is kInvalidArgument, saying which.
  virtual Task<Status> prepare_remote_topic(std::string cluster, protocol::TopicName topic) = 0;
};

class TopicReplicators {
 public:
  virtual ~TopicReplicators() = default;
  // {"<remote cluster>": ReplicatorStats, ...}
  virtual nlohmann::json stats() const = 0;
  // The remote clusters replicated to, and whether every one's replicator is connected now
  // (replicated subscriptions take snapshots only then).
  virtual std::vector<std::string> remotes() const = 0;
  virtual bool all_connected() const = 0;
};

}  // namespace magnetar::broker
