#pragma once
// Replicated subscriptions (Pulsar's PIP-33): a subscription's position carried to the peer
// clusters, so that consumers moving to another cluster find it (almost) where they left it.
//
//  1. Every replicatedSubscriptionsSnapshotFrequencyMillis, a topic with a replicated
//     subscription whose replicators are all connected, and on which this cluster's producers
//     stored a message since the last snapshot began, writes a SNAPSHOT_REQUEST marker (which
//     every peer receives).
//  2. A peer storing the request writes a SNAPSHOT_RESPONSE with its own last position,
//     replicated to the requester only.
//  3. When every peer answered, the requester writes a SNAPSHOT (local only): its position
//     where the last response was stored, and each peer's position. Unanswered requests are
//     abandoned after replicatedSubscriptionsSnapshotTimeoutSeconds.
//  4. Replicated subscriptions cache the snapshots they read; when one's mark-delete passes a
//     snapshot, an UPDATE {subscription, peers' positions} is written, replicated to all.
//  5. A peer storing an UPDATE moves that subscription there to its own position (creating it
//     at Earliest if missing): a cumulative acknowledgement.
//
// Positions only move forward, so a consumer that fails over re-reads at most what it
// consumed after the last snapshot its subscription passed: duplicates, never a gap. One
// round of request and responses (Pulsar runs a second one with more than one peer).
//
// Threading: on the topic's loop; owned by the topic.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/buffer.h"
#include "common/logging.h"
#include "mledger/position.h"

namespace magnetar::broker {

class PersistentTopic;
class Subscription;

class ReplicatedSubscriptions {
 public:
  explicit ReplicatedSubscriptions(PersistentTopic& topic);

  // A message of this cluster's producers was stored: the next period takes a snapshot.
  void data_published() { data_since_snapshot_ = true; }
  // Called often (the registry's tick); acts once per snapshot period.
  void tick(std::chrono::steady_clock::time_point now);
  // A marker another cluster's replicator stored here at `stored_at`.
  void remote_marker(int32_t type, const std::string& source, const Buffer& payload,
                     mledger::Position stored_at);
  // The mark-delete of `sub` may have moved.
  void position_moved(Subscription& sub);

  int64_t snapshots_completed() const { return snapshots_completed_; }

 private:
  void request_snapshot(std::chrono::steady_clock::time_point now);

  PersistentTopic& topic_;
  log::Logger log_;
  bool data_since_snapshot_ = false;
  std::chrono::steady_clock::time_point next_tick_{};
  struct Pending {
    std::string id;
    std::chrono::steady_clock::time_point started;
    std::map<std::string, mledger::Position> responses;  // by peer cluster
  };
  std::optional<Pending> pending_;
  int64_t snapshots_completed_ = 0;
};

}  // namespace magnetar::broker
