#pragma once
// Where the broker's instance-wide state lives in the configuration store, with Pulsar's node
// paths (../shared/reference/pulsar-geo-replication.md, configuration store). One place for
// every room that reads or writes these nodes.

#include <string>
#include <string_view>

#include "protocol/topic_name.h"

namespace magnetar::broker {

// A cluster's ClusterData (serviceUrl, brokerServiceUrl, ...): "/admin/clusters/<cluster>".
std::string cluster_path(std::string_view cluster);
// A namespace's Policies: "/admin/policies/<tenant>/<namespace>" (`ns` = "tenant/namespace").
std::string namespace_policies_path(std::string_view ns);
// A partitioned topic's metadata ({"partitions": N}):
// "/admin/partitioned-topics/<tenant>/<namespace>/<domain>/<encoded local name>".
std::string partitioned_topic_path(const protocol::TopicName& topic);
// The partitioned topics of a namespace:
// "/admin/partitioned-topics/<tenant>/<namespace>/persistent".
std::string partitioned_topics_dir(std::string_view ns);

}  // namespace magnetar::broker
