#pragma once
// Pulsar's admin REST API and HTTP lookup (../shared/reference/pulsar-protocol.md §4), on a web
// port, as one http::Router whose every route names the permission it needs (README.md):
//
//   /admin/v2/clusters[/{cluster}[/peers]]                    clusters        (clusters.cc)
//   /admin/v2/tenants[/{tenant}]                              tenants         (tenants.cc)
//   /admin/v2/namespaces/{tenant}[/{ns}[/...]]                namespaces      (namespaces.cc,
//                                                             namespace_policies.cc)
// and, on a broker:
//   /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload|split  bundles (namespace_bundles.cc)
//   /admin/v2/namespaces/{tenant}/{ns}/unload|clearBacklog    every bundle
//   GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}       lookup          (lookup.cc)
//   /admin/v2/persistent/{tenant}/{ns}[/partitioned]          topic lists     (topics.cc)
//   /admin/v2/persistent/{tenant}/{ns}/{topic}/partitions     partitioned (partitioned_topics.cc)
//   /admin/v2/persistent/{tenant}/{ns}/{topic}[/...]          topics, subscriptions (topics.cc,
//                                                             subscriptions.cc)
//   /admin/v2/brokers[/...]                                   brokers         (brokers.cc)
//   /admin/v2/bookies/all, /admin/v2/bookies/racks-info[/{bookie}]  bookie racks (bookies.cc)
//
// Clusters, tenants and namespaces live in the configuration store with Pulsar's node paths and
// JSON field names (policies_json.h); every change is a compare-and-set, so concurrent admin
// calls never lose each other's updates. A policy change applies to topics loaded after it.
// A namespace with topics (managed ledgers in the cluster store, partitioned-topic metadata in
// the configuration store) cannot be deleted.
//
// Topic and bundle operations reaching a broker that does not own the topic's bundle are
// answered 307 with Location on the owner (after placing an unowned bundle, as a lookup does),
// so any broker's URL works for every call.
//
// Answers as Pulsar's: 200 with JSON for reads (204 when an optional policy is unset), 204 for
// writes, errors as {"reason": "..."} with Pulsar's codes (404 unknown cluster, tenant,
// namespace or topic; 409 exists already or not empty; 412 failed precondition; 400 malformed
// body; 503 no broker or store available), never a 500 for bad input. No authorization yet:
// every caller may do everything; permissions are stored, not enforced.

#include <cstdint>
#include <string>
#include <vector>

#include "broker/service/broker_services.h"
#include "http/http_server.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker {

class LoadManager;

struct AdminResourcesOptions {
  // This broker's cluster (clusterName): the replication cluster of namespaces created
  // without one.
  std::string cluster_name = "standalone";
  // Bundles of a namespace created without a bundles policy (defaultNumberOfNamespaceBundles).
  int32_t default_number_of_namespace_bundles = 4;
  // isAllowAutoUpdateSchema: what a namespace without the policy answers.
  bool allow_auto_update_schema = true;
};

// The clusters, tenants and namespaces resources alone (an admin server without a broker):
// registers them on `web`. The handlers run on `web`'s event loop and keep `stores` (shared)
// alive as long as `web` keeps its routes.
void add_admin_resource_routes(http::HttpServer& web, metadata::MetadataStores stores,
                               AdminResourcesOptions options);

// The whole API of a broker: the resources above, lookup, topics, brokers and the bundle
// operations. `broker`'s objects and `load` (null: standalone, without a load manager) outlive
// `web`'s routes.
void add_admin_routes(http::HttpServer& web, metadata::MetadataStores stores,
                      AdminResourcesOptions options, BrokerServices broker, LoadManager* load);

// The boundaries of `num_bundles` (>= 1) equal bundles of the 32-bit hash range, as Pulsar
// computes them: "0x00000000", ..., "0xffffffff" (num_bundles + 1 strings).
std::vector<std::string> bundle_boundaries(int32_t num_bundles);

}  // namespace magnetar::broker
