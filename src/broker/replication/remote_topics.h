#pragma once
// Makes a topic exist in a remote cluster in the shape it has here, before a replicator
// publishes to it or a topic's own replication clusters name that cluster (Pulsar's
// createTopicToRemoteClusterForReplication), through the remote's admin REST API (not a
// lookup, which could auto-create a topic of the wrong shape):
//
//   here        remote        then
//   not parted  nothing       PUT .../{topic} (the non-partitioned topic; 409 is fine)
//   not parted  M partitions  kInvalidArgument "Topic type is not matched ..."
//   N parts     nothing       PUT .../{topic}/partitions N (409 is fine), and check again
//   N parts     M != N        kInvalidArgument "The number of topic partitions is
//                             inconsistent ..."
//
// Pulsar retries a mismatch silently forever; the replicator here retries too (someone may
// fix the remote) but reports the reason in its stats (`lastError`) and its log.
// Errors: kInvalidArgument (a mismatch, or no admin URL in the remote's ClusterData),
// kUnavailable (the remote's REST API cannot be reached, or answered 5xx), kNotFound (no
// such cluster), kPermissionDenied (the remote refused), the store's.
//
// Threading: any event loop; the objects given outlive this one.

#include <string>

#include "common/asio.h"
#include "common/status.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

class RemoteClusters;
class TopicRegistry;

class RemoteTopics {
 public:
  RemoteTopics(RemoteClusters& remotes, TopicRegistry& topics)
      : remotes_(remotes), topics_(topics) {}

  // `topic`: a non-partitioned topic, a partition, or a partitioned topic's own name.
  // `grow`: a remote partitioned topic with fewer partitions gets more (a replicator's call;
  // the admin API's check refuses any difference, as Pulsar's does).
  Task<Status> ensure(std::string cluster, protocol::TopicName topic, bool grow);

 private:
  RemoteClusters& remotes_;
  TopicRegistry& topics_;
};

}  // namespace magnetar::broker
