#pragma once
// The JSON documents of the configuration store's admin nodes, with Pulsar's field names, and
// the checks their REST bodies get (../shared/reference/pulsar-protocol.md §4.2–4.3):
//
//   ClusterData  {"serviceUrl", "brokerServiceUrl", ...}            /admin/clusters/{cluster}
//   TenantInfo   {"adminRoles": [...], "allowedClusters": [...]}    /admin/policies/{tenant}
//   Policies     {"replication_clusters", "bundles", "retention_policies",
//                 "message_ttl_in_seconds", "backlog_quota_map", "deduplicationEnabled",
//                 "auth_policies", ...}                             /admin/policies/{t}/{ns}
//
// A parse_* function answers a body as Pulsar does: the normalized JSON to store, or the 400
// (malformed) / 412 (well-formed, not allowed) to answer. Pure functions: no store, no state.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/admin/admin_resources.h"
#include "broker/admin/admin_support.h"
#include "http/http_server.h"

namespace magnetar::broker::admin {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// --- Reading JSON ------------------------------------------------------------------------

// obj[key], or null when `obj` is not an object or has no such member (never inserts).
const Json& member(const Json& obj, const char* key);
// The integer `j` holds when it is one within [lo, hi] (hi >= 0); floats are not integers.
std::optional<int64_t> integer_in(const Json& j, int64_t lo, int64_t hi);
// Only whitespace (or nothing).
bool blank(std::string_view s);
// The request body as JSON: null when empty, 400 when not JSON.
OrResponse<Json> parse_body(const http::Request& req);
// A JSON list of strings (null: empty) without duplicates, in the order given; 400 naming
// `what` otherwise.
OrResponse<std::vector<std::string>> parse_string_list(const Json& j, std::string_view what);
bool contains(const std::vector<std::string>& v, std::string_view s);
// The strings of a stored JSON list (anything else reads as empty).
std::vector<std::string> stored_strings(const Json& j);

// --- ClusterData ---------------------------------------------------------------------------

// Checks a ClusterData body (Pulsar's ClusterDataImpl) and keeps its known fields; unknown
// fields are dropped, as Pulsar's JSON mapper does.
OrResponse<Json> parse_cluster_data(const Json& body);
// A stored ClusterData as GET shows it: with the boolean fields Pulsar always includes.
Json cluster_view(Json data);

// --- TenantInfo ----------------------------------------------------------------------------

struct TenantInfo {
  std::vector<std::string> admin_roles;
  std::vector<std::string> allowed_clusters;

  Json to_json() const;
};

// A TenantInfo body; null gives no clusters (which the caller's cluster check refuses).
OrResponse<TenantInfo> parse_tenant_info(const Json& body);
TenantInfo stored_tenant(const Json& value);

// --- Policies ------------------------------------------------------------------------------

// Pulsar's Policies defaults for what a namespace node does not say. Null fields are left out
// (Pulsar's JSON mapper omits them too).
Json default_policies();
// The bundles of a stored namespace: its boundaries when it has them, else computed from its
// numBundles (the standalone bootstrap stores only that), else `default_bundles`.
Json effective_bundles(const Json& policies, int32_t default_bundles);
// A stored Policies as GET shows it: Pulsar's defaults for what is missing, computed bundles.
Json policies_view(Json policies, int32_t default_bundles);
// A RetentionPolicies body, checked as Pulsar does (-1: no limit; 0 and 0: no retention).
OrResponse<Json> parse_retention(const Json& j);
// A BacklogQuota body ({limitSize (or the older limit), limitTime, policy}); what is missing is
// -1 (no limit), and the policy producer_request_hold.
OrResponse<Json> parse_backlog_quota(const Json& j);
// destination_storage or message_age.
bool is_backlog_quota_type(std::string_view s);
// The backlogQuotaType query parameter (default destination_storage); nullopt when unknown.
std::optional<std::string> backlog_quota_type(const http::Request& req);
// A list of AuthAction names, sorted and without duplicates.
OrResponse<std::vector<std::string>> parse_auth_actions(const Json& j);
// Pulsar's rule between the two: a backlog quota must be reached before retention would let
// the backlog go (size against destination_storage.limitSize, time against
// message_age.limitTime). Either may be unset.
bool quota_fits_retention(const Json& quota_map, const Json& retention);
// The 412 reasons when quota_fits_retention() fails, after a retention or a quota change.
extern const char* const kRetentionBelowQuota;
extern const char* const kQuotaAboveRetention;
// Checks a Policies body for namespace creation and fills in Pulsar's defaults (replication to
// this cluster, the default bundles). The replication clusters are checked against the store
// by the caller. Fields this broker does not use are kept as given.
OrResponse<Json> new_namespace_policies(const Json& body, const AdminResourcesOptions& options);

}  // namespace magnetar::broker::admin
