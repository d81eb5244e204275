#pragma once
// The configuration store's admin nodes as the clusters, tenants and namespaces resources use
// them: their names and paths, reading one as a JSON object, and changing one by
// compare-and-set (read, modify, write at the version read, start over on kBadVersion), so
// that concurrent admin calls, here or on other brokers, never lose each other's updates.
//
//   /admin/clusters/{cluster}       ClusterData
//   /admin/policies/{tenant}        TenantInfo
//   /admin/policies/{tenant}/{ns}   Policies (the node Broker::load_topic reads)
//
// Threads: the coroutines run on the web server's loop and await the store; `store`
// arguments outlive the calls.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/admin/admin_support.h"
#include "broker/config/store_paths.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker::admin {

constexpr const char* kNoNamespace = "Namespace does not exist";
constexpr const char* kNoTenant = "Tenant does not exist";
constexpr const char* kNoCluster = "Cluster does not exist";

// How many times a compare-and-set starts over before answering 409 "Concurrent modification".
constexpr int kMaxCasAttempts = 16;

// Pulsar's NamedEntity rule for cluster, tenant and namespace names ([-=:.\w]+), less "." and
// "..", which cannot be metadata path components.
bool valid_name(std::string_view s);
// Well-formed UTF-8 without control characters (role names come URL-decoded from the path).
bool valid_role(std::string_view s);

struct NamespaceName {
  std::string tenant;
  std::string local;

  std::string full() const { return tenant + "/" + local; }
  // Both names valid (valid_name).
  bool valid() const;
  std::string policies_path() const;
  // Cluster store: a managed ledger per persistent topic below <ledgers_dir>/persistent.
  std::string ledgers_dir() const;
  // Configuration store: partitioned-topic metadata below <partitioned_dir>/<domain>.
  std::string partitioned_dir() const;
};

// The {tenant} and {namespace} of a route's path.
NamespaceName namespace_of(const http::PathParams& p);

// 412 "Namespace name is not valid": the answer to any path under
// /admin/v2/namespaces/{tenant}/{ns} whose names are not.
http::Response invalid_namespace_name();

struct Node {
  Json value;  // a JSON object
  int64_t version = 0;
};

// The JSON object at `path`; nullopt when the node does not exist. An empty value (a node
// created as a parent by put_recursive) reads as {}; a value that is not a JSON object is
// reported as corrupt (500) and never overwritten.
Task<OrResponse<std::optional<Node>>> load(metadata::MetadataStore& store, std::string path);

// Changes a JSON object in place, or answers a response instead (nothing is written then).
using Mutation = std::function<std::optional<http::Response>(Json&)>;

// Compare-and-set of the JSON object at `path`: reads it, applies `mutate` and writes it at the
// version read, starting over when someone else wrote in between (so `mutate` may run more
// than once). Answers 204, 404 `missing` when the node does not exist, what `mutate`
// answered, or 409 after too many attempts. `mutate` must outlive the call.
Task<http::Response> update_node(metadata::MetadataStore& store, std::string path,
                                 const Mutation& mutate, std::string missing);

// "tenant/ns" of the namespaces (of `tenant` only, unless empty) replicated to `cluster`.
// (Arguments are plain strings, "" for all tenants: GCC 12 mishandles class-type
// temporaries inside co_await expressions, see common/asio.h.)
Task<OrResponse<std::vector<std::string>>> namespaces_using(metadata::MetadataStore& configuration,
                                                            std::string cluster,
                                                            std::string tenant);

// Pulsar's checks of a namespace's replication clusters: not "global" (412), the tenant
// exists (404), each cluster known and allowed by the tenant (403 otherwise). nullopt when
// they pass.
Task<std::optional<http::Response>> check_replication_clusters(
    metadata::MetadataStore& configuration, const std::string& tenant,
    const std::vector<std::string>& clusters);

}  // namespace magnetar::broker::admin
