#pragma once
// Pulsar's admin REST API for clusters, tenants and namespaces (`/admin/v2/clusters`,
// `/admin/v2/tenants`, `/admin/v2/namespaces`; ../shared/reference/pulsar-protocol.md §4.2–4.3)
// over the configuration metadata store, with Pulsar's node paths and JSON field names:
//
//   /admin/clusters/{cluster}        ClusterData {"serviceUrl", "brokerServiceUrl", ...}
//   /admin/policies/{tenant}         TenantInfo  {"adminRoles": [...], "allowedClusters": [...]}
//   /admin/policies/{tenant}/{ns}    Policies    {"replication_clusters", "bundles",
//                                    "retention_policies", "message_ttl_in_seconds",
//                                    "backlog_quota_map", "deduplicationEnabled", ...}
//
// The Policies node is the one Broker::load_topic reads. Every change to a node is a
// compare-and-set (read, modify, write at the version read, start over on kBadVersion), so
// concurrent admin calls, here or on other brokers, never lose each other's updates.
// A policy change applies to topics loaded after it: topics already loaded keep the policies
// they were loaded with until they are unloaded.
//
// A namespace's topics are the managed ledgers under /managed-ledgers/{tenant}/{ns}/persistent
// in the cluster store, and the partitioned-topic metadata under
// /admin/partitioned-topics/{tenant}/{ns}/ in the configuration store; a namespace that has
// either cannot be deleted.
//
// Answers as Pulsar's: 200 with JSON for reads (204 when an optional policy is unset), 204 for
// writes, errors as {"reason": "..."} with Pulsar's codes (404 unknown cluster, tenant or
// namespace; 409 exists already or not empty; 412 failed precondition; 400 malformed body).
// No authentication: every caller is a super-user; permissions are stored, not enforced.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker {

struct AdminResourcesOptions {
  // This broker's cluster (clusterName): the replication cluster of namespaces created
  // without one.
  std::string cluster_name = "standalone";
  // Bundles of a namespace created without a bundles policy (defaultNumberOfNamespaceBundles).
  int32_t default_number_of_namespace_bundles = 4;
  // The namespace operations that need a broker (bundle unload and split, clearBacklog):
  // asked first for every /admin/v2/namespaces/{tenant}/{ns}/... request, with the decoded
  // path segments after /admin/v2/namespaces/; nullopt when it is not one of them.
  std::function<Task<std::optional<http::Response>>(const http::Request&,
                                                    const std::vector<std::string>&)>
      broker_operations;
};

// Registers the routes on `web`. The handlers run on `web`'s event loop and keep `stores`
// (shared) alive as long as `web` keeps its routes.
void add_admin_resource_routes(http::HttpServer& web, metadata::MetadataStores stores,
                               AdminResourcesOptions options);

// The boundaries of `num_bundles` (>= 1) equal bundles of the 32-bit hash range, as Pulsar
// computes them: "0x00000000", ..., "0xffffffff" (num_bundles + 1 strings).
std::vector<std::string> bundle_boundaries(int32_t num_bundles);

}  // namespace magnetar::broker
