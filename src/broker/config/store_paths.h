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
// A tenant's TenantInfo: "/admin/policies/<tenant>".
std::string tenant_path(std::string_view tenant);
// A namespace's Policies: "/admin/policies/<tenant>/<namespace>" (`ns` = "tenant/namespace").
std::string namespace_policies_path(std::string_view ns);
// A partitioned topic's metadata ({"partitions": N}):
// "/admin/partitioned-topics/<tenant>/<namespace>/<domain>/<encoded local name>".
std::string partitioned_topic_path(const protocol::TopicName& topic);
// The partitioned topics of a namespace:
// "/admin/partitioned-topics/<tenant>/<namespace>/<persistent|non-persistent>".
std::string partitioned_topics_dir(std::string_view ns,
                                   protocol::TopicDomain domain = protocol::TopicDomain::kPersistent);

// A topic's own policies, JSON with Pulsar's TopicPolicies field names (so far
// {"replicationClusters": [...]}). Pulsar keeps them in the namespace's `__change_events`
// system topic; Magnetar in one node per topic: the global ones (every cluster sharing the
// configuration store applies them) in the configuration store at
// "/admin/topic-policies/<tenant>/<namespace>/<domain>/<encoded local name>", the local ones
// (this cluster only) in the cluster's store at "/admin/local-topic-policies/...". A
// partition has its partitioned topic's.
std::string topic_policies_path(const protocol::TopicName& topic, bool global);
// The namespace's directory of those nodes.
std::string topic_policies_dir(std::string_view ns, bool global);

}  // namespace magnetar::broker
