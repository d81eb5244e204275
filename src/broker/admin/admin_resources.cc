#include "broker/admin/admin_resources.h"

#include "broker/namespace/bundles.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include "common/logging.h"

namespace magnetar::broker {

namespace {

using http::Request;
using http::Response;
using Json = nlohmann::json;

// A value, or the response that says why there is none.
template <typename T>
using OrResponse = std::variant<T, Response>;

constexpr std::string_view kClustersPrefix = "/admin/v2/clusters/";
constexpr std::string_view kTenantsPrefix = "/admin/v2/tenants/";
constexpr std::string_view kNamespacesPrefix = "/admin/v2/namespaces/";

constexpr int kMaxCasAttempts = 16;
constexpr int64_t kMaxNumBundles = 4096;  // keeps a Policies node far below the value limit
constexpr uint64_t kHashRange = 0x100000000ULL;
constexpr int64_t kBytesPerMb = 1024 * 1024;
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

constexpr const char* kNoNamespace = "Namespace does not exist";
constexpr const char* kNoTenant = "Tenant does not exist";
constexpr const char* kNoCluster = "Cluster does not exist";

// ------------------------------------------------------------------------------------------
// JSON and responses

// Never throws: strings that are not UTF-8 (decoded URL parts) are dumped with U+FFFD.
std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Response ok(const Json& j) {
  return Response::json(200, dump(j));
}

Response no_content() {
  Response r;
  r.status = 204;
  return r;
}

Response error(int status, std::string_view reason) {
  return Response::error(status, reason);
}

Response method_not_allowed() {
  return error(405, "Method Not Allowed");
}

Response store_error(const Status& st) {
  if (st.is(Errc::kResourceExhausted)) return error(412, "The resulting metadata is too large");
  if (st.is(Errc::kUnavailable) || st.is(Errc::kTimeout) || st.is(Errc::kFenced)) {
    return error(503, "Metadata store unavailable: " + st.message());
  }
  return error(500, "Metadata store error: " + st.message());
}

// obj[key], or null when `obj` is not an object or has no such member (never inserts).
const Json& member(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// The integer `j` holds when it is one within [lo, hi] (hi >= 0); floats are not integers.
std::optional<int64_t> integer_in(const Json& j, int64_t lo, int64_t hi) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(hi)) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

// An integer member of a stored object, or `fallback`.
int64_t int_field(const Json& obj, const char* key, int64_t fallback) {
  auto v = integer_in(member(obj, key), kInt64Min, kInt64Max);
  return v ? *v : fallback;
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// The request body as JSON: null when empty, 400 when not JSON.
OrResponse<Json> parse_body(const Request& req) {
  if (blank(req.body)) return Json();
  Json j = Json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return error(400, "Cannot parse the request body as JSON");
  return j;
}

// A JSON list of strings (null: empty) without duplicates, in the order given.
OrResponse<std::vector<std::string>> parse_string_list(const Json& j, std::string_view what) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return error(400, fmt::format("{} must be a list of strings", what));
  for (const Json& e : j) {
    if (!e.is_string()) return error(400, fmt::format("{} must be a list of strings", what));
    std::string s = e.get<std::string>();
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  }
  return out;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The strings of a stored JSON list (anything else reads as empty).
std::vector<std::string> stored_strings(const Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const Json& e : j) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Names and paths

// Pulsar's NamedEntity rule for cluster, tenant and namespace names ([-=:.\w]+), less "." and
// "..", which cannot be metadata path components.
bool valid_name(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '=' || c == ':' || c == '.';
  });
}

// Well-formed UTF-8 without control characters (role names come URL-decoded from the path).
bool valid_role(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    size_t extra;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      extra = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

// The URL-decoded segments of `path` after `prefix` (a trailing '/' ignored); nullopt when an
// escape is malformed.
std::optional<std::vector<std::string>> segments(std::string_view path, std::string_view prefix) {
  return http::path_segments(path, prefix);
}

std::string cluster_path(std::string_view cluster) {
  return fmt::format("/admin/clusters/{}", cluster);
}
std::string tenant_path(std::string_view tenant) {
  return fmt::format("/admin/policies/{}", tenant);
}

struct NamespaceName {
  std::string tenant;
  std::string local;

  std::string full() const { return tenant + "/" + local; }
  std::string policies_path() const { return fmt::format("/admin/policies/{}/{}", tenant, local); }
  // Cluster store: a managed ledger per persistent topic below <ledgers_dir>/persistent.
  std::string ledgers_dir() const { return fmt::format("/managed-ledgers/{}/{}", tenant, local); }
  // Configuration store: partitioned-topic metadata below <partitioned_dir>/<domain>.
  std::string partitioned_dir() const {
    return fmt::format("/admin/partitioned-topics/{}/{}", tenant, local);
  }
};

// ------------------------------------------------------------------------------------------
// Stored nodes and compare-and-set

struct Node {
  Json value;  // a JSON object
  int64_t version = 0;
};

// The JSON object at `path`; nullopt when the node does not exist. An empty value (a node
// created as a parent by put_recursive) reads as {}; a value that is not a JSON object is
// reported as corrupt (500) and never overwritten.
Task<OrResponse<std::optional<Node>>> load(metadata::MetadataStore& store, std::string path) {
  auto got = co_await store.get(path);
  if (!got.ok()) co_return store_error(got.status());
  if (!got->has_value()) co_return std::optional<Node>();
  const metadata::GetResult& r = **got;
  Json value = r.value.empty() ? Json::object() : Json::parse(r.value, nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    co_return error(500, fmt::format("Corrupt metadata at {}", path));
  }
  co_return std::optional<Node>(Node{std::move(value), r.stat.version});
}

// Changes a JSON object in place, or answers a response instead (nothing is written then).
using Mutation = std::function<std::optional<Response>(Json&)>;

// Compare-and-set of the JSON object at `path`: reads it, applies `mutate` and writes it at the
// version read, starting over when someone else wrote in between (so `mutate` may run more
// than once). Answers 204, 404 `missing` when the node does not exist, or what `mutate` answered.
// `mutate` must outlive the call.
Task<Response> update_node(metadata::MetadataStore& store, std::string path, const Mutation& mutate,
                           std::string missing) {
  for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
    auto loaded = co_await load(store, path);
    if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
    std::optional<Node>& node = std::get<0>(loaded);
    if (!node) co_return error(404, missing);
    if (auto refused = mutate(node->value)) co_return std::move(*refused);
    metadata::PutOptions at_version;
    at_version.expected_version = node->version;
    auto put = co_await store.put(path, dump(node->value), at_version);
    if (put.ok()) co_return no_content();
    if (put.status().is(Errc::kNotFound)) co_return error(404, missing);
    if (!put.status().is(Errc::kBadVersion)) co_return store_error(put.status());
  }
  co_return error(409, "Concurrent modification");
}

// ------------------------------------------------------------------------------------------
// ClusterData

constexpr const char* kClusterStringFields[] = {
    "serviceUrl",
    "serviceUrlTls",
    "brokerServiceUrl",
    "brokerServiceUrlTls",
    "proxyServiceUrl",
    "proxyProtocol",
    "authenticationPlugin",
    "authenticationParameters",
    "brokerClientTlsTrustStoreType",
    "brokerClientTlsTrustStore",
    "brokerClientTlsTrustStorePassword",
    "brokerClientTlsKeyStoreType",
    "brokerClientTlsKeyStore",
    "brokerClientTlsKeyStorePassword",
    "brokerClientTrustCertsFilePath",
    "brokerClientKeyFilePath",
    "brokerClientCertificateFilePath",
    "brokerClientSslFactoryPlugin",
    "brokerClientSslFactoryPluginParams",
    "listenerName",
};
constexpr const char* kClusterBoolFields[] = {
    "brokerClientTlsEnabled",
    "tlsAllowInsecureConnection",
    "brokerClientTlsEnabledWithKeyStore",
    "migrated",
};

struct UrlRule {
  const char* field;
  std::string_view scheme;
  const char* reason;
};
constexpr UrlRule kClusterUrlRules[] = {
    {"serviceUrl", "http://", "Illegal service url, example: http://pulsar.example.com:8080"},
    {"serviceUrlTls", "https://",
     "Illegal service tls url, example: https://pulsar.example.com:8443"},
    {"brokerServiceUrl", "pulsar://",
     "Illegal broker service url, example: pulsar://pulsar.example.com:6650"},
    {"brokerServiceUrlTls", "pulsar+ssl://",
     "Illegal broker service tls url, example: pulsar+ssl://pulsar.example.com:6651"},
};

// Checks a ClusterData body (Pulsar's ClusterDataImpl) and keeps its known fields; unknown
// fields are dropped, as Pulsar's JSON mapper does.
OrResponse<Json> parse_cluster_data(const Json& body) {
  if (body.is_null()) return error(400, "cluster data is required");
  if (!body.is_object()) return error(400, "ClusterData must be a JSON object");
  Json out = Json::object();
  for (const char* key : kClusterStringFields) {
    const Json& v = member(body, key);
    if (v.is_null()) continue;
    if (!v.is_string()) return error(400, fmt::format("ClusterData.{} must be a string", key));
    out[key] = v;
  }
  for (const char* key : kClusterBoolFields) {
    const Json& v = member(body, key);
    if (v.is_null()) continue;
    if (!v.is_boolean()) return error(400, fmt::format("ClusterData.{} must be a boolean", key));
    out[key] = v;
  }
  auto peers = parse_string_list(member(body, "peerClusterNames"), "ClusterData.peerClusterNames");
  if (auto* r = std::get_if<Response>(&peers)) return std::move(*r);
  if (!member(body, "peerClusterNames").is_null()) out["peerClusterNames"] = std::get<0>(peers);
  const Json& migrated_url = member(body, "migratedClusterUrl");
  if (!migrated_url.is_null()) {
    if (!migrated_url.is_object()) {
      return error(400, "ClusterData.migratedClusterUrl must be a JSON object");
    }
    out["migratedClusterUrl"] = migrated_url;
  }
  for (const UrlRule& rule : kClusterUrlRules) {
    const Json& v = member(out, rule.field);
    if (v.is_null()) continue;
    const std::string& url = v.get_ref<const std::string&>();
    if (blank(url)) continue;
    if (!url.starts_with(rule.scheme) || url.size() == rule.scheme.size()) {
      return error(400, rule.reason);
    }
  }
  return out;
}

// A stored ClusterData as GET shows it: with the boolean fields Pulsar always includes.
Json cluster_view(Json data) {
  for (const char* key : kClusterBoolFields) {
    if (!data.contains(key)) data[key] = false;
  }
  return data;
}

// ------------------------------------------------------------------------------------------
// TenantInfo

struct TenantInfo {
  std::vector<std::string> admin_roles;
  std::vector<std::string> allowed_clusters;

  Json to_json() const {
    return {{"adminRoles", admin_roles}, {"allowedClusters", allowed_clusters}};
  }
};

OrResponse<TenantInfo> parse_tenant_info(const Json& body) {
  TenantInfo info;
  if (body.is_null()) return info;  // no clusters: refused by the cluster check
  if (!body.is_object()) return error(400, "TenantInfo must be a JSON object");
  auto roles = parse_string_list(member(body, "adminRoles"), "TenantInfo.adminRoles");
  if (auto* r = std::get_if<Response>(&roles)) return std::move(*r);
  auto clusters = parse_string_list(member(body, "allowedClusters"), "TenantInfo.allowedClusters");
  if (auto* r = std::get_if<Response>(&clusters)) return std::move(*r);
  info.admin_roles = std::move(std::get<0>(roles));
  info.allowed_clusters = std::move(std::get<0>(clusters));
  return info;
}

TenantInfo stored_tenant(const Json& value) {
  return TenantInfo{stored_strings(member(value, "adminRoles")),
                    stored_strings(member(value, "allowedClusters"))};
}

// ------------------------------------------------------------------------------------------
// Policies

constexpr const char* kAuthActions[] = {"produce", "consume", "functions",
                                        "sources", "sinks",   "packages"};
constexpr const char* kQuotaPolicies[] = {"producer_request_hold", "producer_exception",
                                          "consumer_backlog_eviction"};
constexpr const char* kQuotaTypes[] = {"destination_storage", "message_age"};

template <size_t N>
bool one_of(const char* const (&set)[N], std::string_view s) {
  return std::find(std::begin(set), std::end(set), s) != std::end(set);
}

// Pulsar's Policies defaults for what a namespace node does not say. Null fields are left out
// (Pulsar's JSON mapper omits them too).
Json default_policies() {
  return Json{
      {"auth_policies",
       {{"namespace_auth", Json::object()},
        {"destination_auth", Json::object()},
        {"subscription_auth_roles", Json::object()}}},
      {"replication_clusters", Json::array()},
      {"backlog_quota_map", Json::object()},
      {"clusterDispatchRate", Json::object()},
      {"topicDispatchRate", Json::object()},
      {"subscriptionDispatchRate", Json::object()},
      {"replicatorDispatchRate", Json::object()},
      {"clusterSubscribeRate", Json::object()},
      {"publishMaxMessageRate", Json::object()},
      {"latency_stats_sample_rate", Json::object()},
      {"deleted", false},
      {"encryption_required", false},
      {"subscription_auth_mode", "None"},
      {"offload_threshold", -1},
      {"schema_compatibility_strategy", "UNDEFINED"},
      {"schema_auto_update_compatibility_strategy", "Full"},
      {"is_allow_auto_update_schema", true},
      {"schema_validation_enforced", false},
      {"subscription_types_enabled", Json::array()},
      {"properties", Json::object()},
  };
}

Json bundles_json(int64_t num_bundles) {
  return {{"boundaries", bundle_boundaries(static_cast<int32_t>(num_bundles))},
          {"numBundles", num_bundles}};
}

// The bundles of a stored namespace: its boundaries when it has them, else computed from its
// numBundles (the standalone bootstrap stores only that), else the default.
Json effective_bundles(const Json& policies, int32_t default_bundles) {
  const Json& bundles = member(policies, "bundles");
  const Json& boundaries = member(bundles, "boundaries");
  if (boundaries.is_array() && boundaries.size() >= 2 &&
      std::all_of(boundaries.begin(), boundaries.end(),
                  [](const Json& b) { return b.is_string(); })) {
    return {{"boundaries", boundaries}, {"numBundles", boundaries.size() - 1}};
  }
  if (auto n = integer_in(member(bundles, "numBundles"), 1, kMaxNumBundles)) {
    return bundles_json(*n);
  }
  return bundles_json(default_bundles);
}

// A stored Policies as GET shows it: Pulsar's defaults for what is missing, computed bundles.
Json policies_view(Json policies, int32_t default_bundles) {
  const Json defaults = default_policies();
  for (const auto& item : defaults.items()) {
    if (!policies.contains(item.key()) || policies[item.key()].is_null()) {
      policies[item.key()] = item.value();
    }
  }
  policies["bundles"] = effective_bundles(policies, default_bundles);
  return policies;
}

// Long.decode as Pulsar applies it to bundle boundaries: 0x/0X/# hex, 0-prefixed octal, decimal.
std::optional<uint64_t> parse_boundary(std::string_view s) {
  int base = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    base = 16, s.remove_prefix(2);
  } else if (s.starts_with("#")) {
    base = 16, s.remove_prefix(1);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8, s.remove_prefix(1);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A BundlesData body: explicit boundaries must cover the whole hash range (400 otherwise, as
// Pulsar answers); numBundles alone is split evenly; neither gives the default.
OrResponse<Json> parse_bundles(const Json& bundles, int32_t default_bundles) {
  if (bundles.is_null()) return bundles_json(default_bundles);
  if (!bundles.is_object()) return error(400, "bundles must be a JSON object");
  std::optional<int64_t> num;
  if (const Json& n = member(bundles, "numBundles"); !n.is_null()) {
    num = integer_in(n, kInt32Min, kInt32Max);
    if (!num) return error(400, "bundles.numBundles must be an integer");
  }
  const Json& boundaries = member(bundles, "boundaries");
  if (!boundaries.is_null() && !boundaries.is_array()) {
    return error(400, "bundles.boundaries must be a list of strings");
  }
  if (boundaries.is_array() && !boundaries.empty()) {
    std::vector<uint64_t> points;
    for (const Json& b : boundaries) {
      auto point = b.is_string() ? parse_boundary(b.get_ref<const std::string&>()) : std::nullopt;
      if (!point) return error(400, "bundles.boundaries must be hexadecimal strings (0x...)");
      points.push_back(*point);
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    if (points.size() < 2 || points.front() != 0 || points.back() != kHashRange - 1) {
      return error(400, fmt::format("Input bundles do not cover the whole hash range. "
                                    "first:0x{:08x}, last:0x{:08x}",
                                    points.front(), points.back()));
    }
    if (points.size() - 1 > static_cast<size_t>(kMaxNumBundles)) {
      return error(412, fmt::format("Invalid number of bundles: at most {}", kMaxNumBundles));
    }
    Json list = Json::array();
    for (uint64_t p : points) list.push_back(fmt::format("0x{:08x}", p));
    return Json{{"boundaries", std::move(list)}, {"numBundles", points.size() - 1}};
  }
  if (num && *num > 0) {
    if (*num > kMaxNumBundles) {
      return error(412, fmt::format("Invalid number of bundles: at most {}", kMaxNumBundles));
    }
    return bundles_json(*num);
  }
  return bundles_json(default_bundles);
}

// A RetentionPolicies body, checked as Pulsar does (-1: no limit; 0 and 0: no retention).
OrResponse<Json> parse_retention(const Json& j) {
  if (j.is_null()) return error(400, "RetentionPolicies is required");
  if (!j.is_object()) return error(400, "RetentionPolicies must be a JSON object");
  int64_t minutes = 0;
  int64_t size_mb = 0;
  if (const Json& t = member(j, "retentionTimeInMinutes"); !t.is_null()) {
    auto v = integer_in(t, kInt32Min, kInt32Max);
    if (!v) return error(400, "retentionTimeInMinutes must be a 32-bit integer");
    minutes = *v;
  }
  if (const Json& s = member(j, "retentionSizeInMB"); !s.is_null()) {
    auto v = integer_in(s, kInt64Min, kInt64Max);
    if (!v) return error(400, "retentionSizeInMB must be an integer");
    size_mb = *v;
  }
  if (size_mb < -1) return error(412, "Invalid retention policy: size limit must be >= -1");
  if (minutes < -1) return error(412, "Invalid retention policy: time limit must be >= -1");
  if ((minutes == 0) != (size_mb == 0)) {
    return error(412,
                 "Invalid retention policy: Setting a single time or size limit to 0 is invalid "
                 "when one of the limits has a non-zero value. Use the value of -1 instead of 0 "
                 "to ignore a specific limit. To disable retention both limits must be set to 0.");
  }
  return Json{{"retentionTimeInMinutes", minutes}, {"retentionSizeInMB", size_mb}};
}

// A BacklogQuota body ({limitSize (or the older limit), limitTime, policy}); what is missing is
// -1 (no limit), and the policy producer_request_hold.
OrResponse<Json> parse_backlog_quota(const Json& j) {
  if (j.is_null()) return error(400, "BacklogQuota is required");
  if (!j.is_object()) return error(400, "BacklogQuota must be a JSON object");
  int64_t limit_size = -1;
  int64_t limit_time = -1;
  std::string policy = "producer_request_hold";
  const Json& size = member(j, "limitSize").is_null() ? member(j, "limit") : member(j, "limitSize");
  if (!size.is_null()) {
    auto v = integer_in(size, kInt64Min, kInt64Max);
    if (!v) return error(400, "BacklogQuota.limitSize must be an integer");
    limit_size = *v;
  }
  if (const Json& t = member(j, "limitTime"); !t.is_null()) {
    auto v = integer_in(t, kInt32Min, kInt32Max);
    if (!v) return error(400, "BacklogQuota.limitTime must be a 32-bit integer");
    limit_time = *v;
  }
  if (const Json& p = member(j, "policy"); !p.is_null()) {
    if (!p.is_string() || !one_of(kQuotaPolicies, p.get_ref<const std::string&>())) {
      return error(400,
                   "BacklogQuota.policy must be producer_request_hold, producer_exception or "
                   "consumer_backlog_eviction");
    }
    policy = p.get<std::string>();
  }
  return Json{{"limitSize", limit_size}, {"limitTime", limit_time}, {"policy", policy}};
}

// A list of AuthAction names, sorted and without duplicates.
OrResponse<std::vector<std::string>> parse_auth_actions(const Json& j) {
  if (j.is_null()) return error(400, "A list of actions is required");
  auto list = parse_string_list(j, "actions");
  if (auto* r = std::get_if<Response>(&list)) return std::move(*r);
  std::vector<std::string> actions = std::move(std::get<0>(list));
  for (const std::string& a : actions) {
    if (!one_of(kAuthActions, a)) {
      return error(400,
                   "Invalid auth action: expected produce, consume, functions, sources, sinks "
                   "or packages");
    }
  }
  std::sort(actions.begin(), actions.end());
  return actions;
}

// Pulsar's rule between the two: a backlog quota must be reached before retention would let
// the backlog go (size against destination_storage.limitSize, time against
// message_age.limitTime). Either may be unset.
bool quota_fits_retention(const Json& quota_map, const Json& retention) {
  if (!retention.is_object() || !quota_map.is_object()) return true;
  const int64_t size_mb = int_field(retention, "retentionSizeInMB", 0);
  const int64_t minutes = int_field(retention, "retentionTimeInMinutes", 0);
  const Json& storage = member(quota_map, "destination_storage");
  if (size_mb > 0 && size_mb <= kInt64Max / kBytesPerMb && storage.is_object()) {
    const int64_t limit = int_field(storage, "limitSize", int_field(storage, "limit", -1));
    if (limit >= size_mb * kBytesPerMb) return false;
  }
  const Json& age = member(quota_map, "message_age");
  if (minutes > 0 && age.is_object() && int_field(age, "limitTime", -1) >= minutes * 60) {
    return false;
  }
  return true;
}

constexpr const char* kRetentionBelowQuota =
    "Retention Quota must exceed configured backlog quota for namespace.";
constexpr const char* kQuotaAboveRetention =
    "Backlog Quota exceeds configured retention quota for namespace. Please increase retention "
    "quota and retry";

// Checks a Policies body for namespace creation and fills in Pulsar's defaults (replication to
// this cluster, the default bundles). The replication clusters are checked against the store
// by the caller. Fields this broker does not use are kept as given.
OrResponse<Json> new_namespace_policies(const Json& body, const AdminResourcesOptions& options) {
  if (!body.is_null() && !body.is_object()) return error(400, "Policies must be a JSON object");
  Json p = default_policies();
  if (body.is_object()) {
    for (const auto& item : body.items()) {
      if (!item.value().is_null()) p[item.key()] = item.value();
    }
  }
  auto clusters = parse_string_list(member(p, "replication_clusters"), "replication_clusters");
  if (auto* r = std::get_if<Response>(&clusters)) return std::move(*r);
  if (std::get<0>(clusters).empty()) std::get<0>(clusters).push_back(options.cluster_name);
  p["replication_clusters"] = std::get<0>(clusters);

  auto bundles =
      parse_bundles(member(body, "bundles"), options.default_number_of_namespace_bundles);
  if (auto* r = std::get_if<Response>(&bundles)) return std::move(*r);
  p["bundles"] = std::move(std::get<0>(bundles));

  if (const Json& r = member(body, "retention_policies"); !r.is_null()) {
    auto retention = parse_retention(r);
    if (auto* e = std::get_if<Response>(&retention)) return std::move(*e);
    p["retention_policies"] = std::move(std::get<0>(retention));
  }
  if (const Json& t = member(body, "message_ttl_in_seconds"); !t.is_null()) {
    auto ttl = integer_in(t, kInt32Min, kInt32Max);
    if (!ttl) return error(400, "message_ttl_in_seconds must be a 32-bit integer");
    if (*ttl < 0) return error(412, "Invalid value for message TTL");
  }
  if (const Json& d = member(body, "deduplicationEnabled"); !d.is_null() && !d.is_boolean()) {
    return error(400, "deduplicationEnabled must be true or false");
  }
  if (const Json& quotas = member(body, "backlog_quota_map"); !quotas.is_null()) {
    if (!quotas.is_object()) return error(400, "backlog_quota_map must be a JSON object");
    Json normalized = Json::object();
    for (const auto& item : quotas.items()) {
      if (!one_of(kQuotaTypes, item.key())) {
        return error(400, "backlog_quota_map keys must be destination_storage or message_age");
      }
      auto quota = parse_backlog_quota(item.value());
      if (auto* e = std::get_if<Response>(&quota)) return std::move(*e);
      normalized[item.key()] = std::move(std::get<0>(quota));
    }
    p["backlog_quota_map"] = std::move(normalized);
  }
  if (const Json& auth = member(body, "auth_policies"); !auth.is_null()) {
    if (!auth.is_object()) return error(400, "auth_policies must be a JSON object");
    Json normalized = default_policies()["auth_policies"];
    for (const char* key : {"namespace_auth", "destination_auth", "subscription_auth_roles"}) {
      const Json& v = member(auth, key);
      if (v.is_null()) continue;
      if (!v.is_object()) return error(400, fmt::format("auth_policies.{} must be an object", key));
      normalized[key] = v;
    }
    for (const auto& item : normalized["namespace_auth"].items()) {
      auto actions = parse_auth_actions(item.value());
      if (auto* e = std::get_if<Response>(&actions)) return std::move(*e);
      item.value() = std::get<0>(actions);
    }
    p["auth_policies"] = std::move(normalized);
  }
  if (!quota_fits_retention(member(p, "backlog_quota_map"), member(p, "retention_policies"))) {
    return error(412, kRetentionBelowQuota);
  }
  return p;
}

// ------------------------------------------------------------------------------------------
// The resources

// Owns nothing but shared store handles; every method runs on the HTTP server's loop, and
// each request is served by its own coroutine (they interleave at every store call).
class AdminResources {
 public:
  AdminResources(metadata::MetadataStores stores, AdminResourcesOptions options)
      : stores_(std::move(stores)), options_(std::move(options)) {}

  Task<Response> clusters(const Request& req);
  Task<Response> tenants(const Request& req);
  Task<Response> namespaces(const Request& req);
  Task<Response> list_clusters();
  Task<Response> list_tenants();

 private:
  metadata::MetadataStore& configuration() { return *stores_.configuration; }
  metadata::MetadataStore& cluster_store() { return *stores_.cluster; }

  // Clusters.
  Task<Response> get_cluster(std::string cluster);
  Task<Response> create_cluster(std::string cluster, const Request& req);
  Task<Response> update_cluster(std::string cluster, const Request& req);
  Task<Response> delete_cluster(std::string cluster);
  Task<Response> get_peers(std::string cluster);
  Task<Response> set_peers(std::string cluster, const Request& req);

  // Tenants.
  Task<Response> get_tenant(std::string tenant);
  Task<Response> create_tenant(std::string tenant, const Request& req);
  Task<Response> update_tenant(std::string tenant, const Request& req);
  Task<Response> delete_tenant(std::string tenant, const Request& req);
  Task<std::optional<Response>> check_allowed_clusters(const TenantInfo& info);

  // Namespaces.
  Task<Response> list_namespaces(std::string tenant);
  Task<Response> namespace_op(NamespaceName ns, std::string op, const Request& req);
  Task<Response> get_policies(NamespaceName ns);
  Task<Response> create_namespace(NamespaceName ns, const Request& req);
  Task<Response> delete_namespace(NamespaceName ns, const Request& req);
  Task<Response> list_topics(NamespaceName ns, const Request& req);
  // What GET of a policy answers when the namespace does not set it.
  enum class Unset { kNoContent, kEmptyObject, kEmptyList };
  // GET of one policy field (`field` a string literal).
  Task<Response> get_policy(NamespaceName ns, const char* field, Unset unset);
  Task<Response> update_policies(const NamespaceName& ns, const Mutation& mutate);
  Task<Response> set_retention(NamespaceName ns, const Request& req);
  Task<Response> set_message_ttl(NamespaceName ns, const Request& req);
  Task<Response> set_backlog_quota(NamespaceName ns, const Request& req);
  Task<Response> remove_backlog_quota(NamespaceName ns, const Request& req);
  Task<Response> set_deduplication(NamespaceName ns, const Request& req);
  Task<Response> set_replication(NamespaceName ns, const Request& req);
  Task<Response> grant_permission(NamespaceName ns, std::string role, const Request& req);
  Task<Response> revoke_permission(NamespaceName ns, std::string role);
  Task<Response> remove_policy(NamespaceName ns, const char* field);
  Task<std::optional<Response>> check_replication_clusters(
      const std::string& tenant, const std::vector<std::string>& clusters);
  // "tenant/ns" of the namespaces (of `tenant` only, unless empty) replicated to `cluster`.
  // (Arguments are plain strings, "" for all tenants: GCC 12 mishandles class-type
  // temporaries inside co_await expressions, see common/asio.h.)
  Task<OrResponse<std::vector<std::string>>> namespaces_using(std::string cluster,
                                                              std::string tenant);

  metadata::MetadataStores stores_;
  const AdminResourcesOptions options_;
  log::Logger log_{"admin"};
};

// --- Clusters ------------------------------------------------------------------------------

Task<Response> AdminResources::list_clusters() {
  auto names = co_await configuration().children("/admin/clusters");
  if (!names.ok()) co_return store_error(names.status());
  Json out = Json::array();
  for (const std::string& name : *names) {
    if (name != "global") out.push_back(name);
  }
  co_return ok(out);
}

Task<Response> AdminResources::clusters(const Request& req) {
  auto parts = segments(req.path, kClustersPrefix);
  if (!parts) co_return error(400, "Malformed URL");
  if (parts->empty()) {
    if (req.method == "GET") co_return co_await list_clusters();
    co_return method_not_allowed();
  }
  std::string name = (*parts)[0];
  if (parts->size() == 1) {
    if (req.method == "PUT") co_return co_await create_cluster(std::move(name), req);
    if (!valid_name(name)) co_return error(404, kNoCluster);
    if (req.method == "GET") co_return co_await get_cluster(std::move(name));
    if (req.method == "POST") co_return co_await update_cluster(std::move(name), req);
    if (req.method == "DELETE") co_return co_await delete_cluster(std::move(name));
    co_return method_not_allowed();
  }
  if (parts->size() == 2 && (*parts)[1] == "peers") {
    if (!valid_name(name)) co_return error(404, kNoCluster);
    if (req.method == "GET") co_return co_await get_peers(std::move(name));
    if (req.method == "POST") co_return co_await set_peers(std::move(name), req);
    co_return method_not_allowed();
  }
  co_return error(404, "Not Found");
}

Task<Response> AdminResources::get_cluster(std::string cluster) {
  auto loaded = co_await load(configuration(), cluster_path(cluster));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoCluster);
  co_return ok(cluster_view(std::move(node->value)));
}

Task<Response> AdminResources::create_cluster(std::string cluster, const Request& req) {
  if (!valid_name(cluster)) co_return error(412, "Cluster name is not valid");
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto data = parse_cluster_data(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&data)) co_return std::move(*r);
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await configuration().put_recursive(cluster_path(cluster), dump(std::get<0>(data)),
                                                     create);
  if (!made.ok()) {
    if (made.status().is(Errc::kBadVersion)) co_return error(409, "Cluster already exists");
    co_return store_error(made.status());
  }
  log_.info("created cluster {}", cluster);
  co_return no_content();
}

Task<Response> AdminResources::update_cluster(std::string cluster, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto data = parse_cluster_data(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&data)) co_return std::move(*r);
  // Pulsar replaces the whole ClusterData.
  const Json& replacement = std::get<0>(data);
  const Mutation replace = [&replacement](Json& value) -> std::optional<Response> {
    value = replacement;
    return std::nullopt;
  };
  co_return co_await update_node(configuration(), cluster_path(cluster), replace, kNoCluster);
}

Task<Response> AdminResources::delete_cluster(std::string cluster) {
  auto exists = co_await configuration().exists(cluster_path(cluster));
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoCluster);
  auto users = co_await namespaces_using(cluster, "");
  if (auto* r = std::get_if<Response>(&users)) co_return std::move(*r);
  if (!std::get<0>(users).empty()) co_return error(412, "Cluster not empty");
  Status st = co_await configuration().remove_recursive(cluster_path(cluster));
  if (!st.ok()) co_return store_error(st);
  log_.info("deleted cluster {}", cluster);
  co_return no_content();
}

Task<Response> AdminResources::get_peers(std::string cluster) {
  auto loaded = co_await load(configuration(), cluster_path(cluster));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoCluster);
  const Json& peers = member(node->value, "peerClusterNames");
  if (!peers.is_array()) co_return no_content();
  co_return ok(peers);
}

Task<Response> AdminResources::set_peers(std::string cluster, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto peers = parse_string_list(std::get<0>(body), "peerClusterNames");
  if (auto* r = std::get_if<Response>(&peers)) co_return std::move(*r);
  auto exists = co_await configuration().exists(cluster_path(cluster));
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoCluster);
  for (const std::string& peer : std::get<0>(peers)) {
    if (peer == cluster) {
      co_return error(412, fmt::format("{} itself can't be part of peer-list", cluster));
    }
    bool found = false;
    if (valid_name(peer)) {
      auto peer_exists = co_await configuration().exists(cluster_path(peer));
      if (!peer_exists.ok()) co_return store_error(peer_exists.status());
      found = *peer_exists;
    }
    if (!found) co_return error(412, fmt::format("Peer cluster {} does not exist", peer));
  }
  const Json list = std::get<0>(peers);
  const Mutation set = [&list](Json& value) -> std::optional<Response> {
    value["peerClusterNames"] = list;
    return std::nullopt;
  };
  co_return co_await update_node(configuration(), cluster_path(cluster), set, kNoCluster);
}

// --- Tenants -------------------------------------------------------------------------------

Task<Response> AdminResources::list_tenants() {
  auto names = co_await configuration().children("/admin/policies");
  if (!names.ok()) co_return store_error(names.status());
  co_return ok(Json(*names));
}

Task<Response> AdminResources::tenants(const Request& req) {
  auto parts = segments(req.path, kTenantsPrefix);
  if (!parts) co_return error(400, "Malformed URL");
  if (parts->empty()) {
    if (req.method == "GET") co_return co_await list_tenants();
    co_return method_not_allowed();
  }
  if (parts->size() != 1) co_return error(404, "Not Found");
  std::string tenant = (*parts)[0];
  if (req.method == "PUT") co_return co_await create_tenant(std::move(tenant), req);
  if (!valid_name(tenant)) co_return error(404, kNoTenant);
  if (req.method == "GET") co_return co_await get_tenant(std::move(tenant));
  if (req.method == "POST") co_return co_await update_tenant(std::move(tenant), req);
  if (req.method == "DELETE") co_return co_await delete_tenant(std::move(tenant), req);
  co_return method_not_allowed();
}

Task<Response> AdminResources::get_tenant(std::string tenant) {
  auto loaded = co_await load(configuration(), tenant_path(tenant));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoTenant);
  Json view = std::move(node->value);
  for (const char* key : {"adminRoles", "allowedClusters"}) {
    if (!member(view, key).is_array()) view[key] = Json::array();
  }
  co_return ok(view);
}

// Pulsar's validateClusters: at least one cluster, none blank, every one known ("global" is).
Task<std::optional<Response>> AdminResources::check_allowed_clusters(const TenantInfo& info) {
  const auto& clusters = info.allowed_clusters;
  if (clusters.empty() || std::any_of(clusters.begin(), clusters.end(), blank)) {
    co_return error(412, "Clusters can not be empty");
  }
  for (const std::string& c : clusters) {
    if (c == "global") continue;
    bool found = false;
    if (valid_name(c)) {
      auto exists = co_await configuration().exists(cluster_path(c));
      if (!exists.ok()) co_return store_error(exists.status());
      found = *exists;
    }
    if (!found) co_return error(412, "Clusters do not exist");
  }
  co_return std::nullopt;
}

Task<Response> AdminResources::create_tenant(std::string tenant, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto info = parse_tenant_info(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&info)) co_return std::move(*r);
  if (auto refused = co_await check_allowed_clusters(std::get<0>(info))) {
    co_return std::move(*refused);
  }
  if (!valid_name(tenant)) co_return error(412, "Tenant name is not valid");
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await configuration().put_recursive(tenant_path(tenant),
                                                     dump(std::get<0>(info).to_json()), create);
  if (!made.ok()) {
    if (made.status().is(Errc::kBadVersion)) co_return error(409, "Tenant already exists");
    co_return store_error(made.status());
  }
  log_.info("created tenant {}", tenant);
  co_return no_content();
}

Task<Response> AdminResources::update_tenant(std::string tenant, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_tenant_info(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const TenantInfo& info = std::get<0>(parsed);
  if (auto refused = co_await check_allowed_clusters(info)) co_return std::move(*refused);
  auto loaded = co_await load(configuration(), tenant_path(tenant));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoTenant);
  // A cluster may leave the tenant only when none of its namespaces replicates to it.
  for (const std::string& old : stored_tenant(node->value).allowed_clusters) {
    if (contains(info.allowed_clusters, old)) continue;
    auto users = co_await namespaces_using(old, tenant);
    if (auto* r = std::get_if<Response>(&users)) co_return std::move(*r);
    if (!std::get<0>(users).empty()) {
      co_return error(409, fmt::format("Cluster {} is still used by namespace {}", old,
                                       std::get<0>(users).front()));
    }
  }
  const Json replacement = info.to_json();
  const Mutation replace = [&replacement](Json& value) -> std::optional<Response> {
    value = replacement;
    return std::nullopt;
  };
  co_return co_await update_node(configuration(), tenant_path(tenant), replace, kNoTenant);
}

Task<Response> AdminResources::delete_tenant(std::string tenant, const Request& req) {
  if (auto force = req.query.find("force"); force != req.query.end() && force->second == "true") {
    co_return error(405, "Broker doesn't allow forced deletion of tenants");
  }
  auto exists = co_await configuration().exists(tenant_path(tenant));
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoTenant);
  auto namespaces = co_await configuration().children(tenant_path(tenant));
  if (!namespaces.ok()) co_return store_error(namespaces.status());
  if (!namespaces->empty()) co_return error(409, "The tenant still has active namespaces");
  Status st = co_await configuration().remove(tenant_path(tenant));
  if (st.code() == metadata::Error::kNotEmpty) {
    co_return error(409, "The tenant still has active namespaces");
  }
  if (st.is(Errc::kNotFound)) co_return error(404, kNoTenant);
  if (!st.ok()) co_return store_error(st);
  // Leftover empty directories; anything still in them stays (and the removal fails).
  (void)co_await configuration().remove(fmt::format("/admin/partitioned-topics/{}", tenant));
  (void)co_await cluster_store().remove(fmt::format("/managed-ledgers/{}", tenant));
  log_.info("deleted tenant {}", tenant);
  co_return no_content();
}

// --- Namespaces ----------------------------------------------------------------------------

Task<Response> AdminResources::namespaces(const Request& req) {
  auto parts = segments(req.path, kNamespacesPrefix);
  if (!parts) co_return error(400, "Malformed URL");
  if (parts->empty()) co_return error(404, "Not Found");
  if (parts->size() == 1) {
    if (req.method == "GET") co_return co_await list_namespaces((*parts)[0]);
    co_return method_not_allowed();
  }
  NamespaceName ns{(*parts)[0], (*parts)[1]};
  if (!valid_name(ns.tenant) || !valid_name(ns.local)) {
    co_return error(412, "Namespace name is not valid");
  }
  if (parts->size() == 2) {
    if (req.method == "GET") co_return co_await get_policies(std::move(ns));
    if (req.method == "PUT") co_return co_await create_namespace(std::move(ns), req);
    if (req.method == "DELETE") co_return co_await delete_namespace(std::move(ns), req);
    co_return method_not_allowed();
  }
  if (options_.broker_operations) {
    auto task = options_.broker_operations(req, *parts);
    std::optional<Response> answered = co_await std::move(task);
    if (answered) co_return std::move(*answered);
  }
  if (parts->size() == 3) co_return co_await namespace_op(std::move(ns), (*parts)[2], req);
  if (parts->size() == 4 && (*parts)[2] == "permissions") {
    std::string role = (*parts)[3];
    if (!valid_role(role)) co_return error(412, "Invalid role name");
    if (req.method == "POST") co_return co_await grant_permission(std::move(ns), role, req);
    if (req.method == "DELETE") co_return co_await revoke_permission(std::move(ns), role);
    co_return method_not_allowed();
  }
  co_return error(404, "Not Found");
}

// The per-policy endpoints: /admin/v2/namespaces/{tenant}/{ns}/{op}.
Task<Response> AdminResources::namespace_op(NamespaceName ns, std::string op, const Request& req) {
  const std::string& m = req.method;
  if (op == "retention") {
    if (m == "GET") co_return co_await get_policy(ns, "retention_policies", Unset::kNoContent);
    if (m == "POST") co_return co_await set_retention(ns, req);
    if (m == "DELETE") co_return co_await remove_policy(ns, "retention_policies");
  } else if (op == "messageTTL") {
    if (m == "GET") co_return co_await get_policy(ns, "message_ttl_in_seconds", Unset::kNoContent);
    if (m == "POST") co_return co_await set_message_ttl(ns, req);
    if (m == "DELETE") co_return co_await remove_policy(ns, "message_ttl_in_seconds");
  } else if (op == "backlogQuotaMap") {
    if (m == "GET") co_return co_await get_policy(ns, "backlog_quota_map", Unset::kEmptyObject);
  } else if (op == "backlogQuota") {
    if (m == "POST") co_return co_await set_backlog_quota(ns, req);
    if (m == "DELETE") co_return co_await remove_backlog_quota(ns, req);
  } else if (op == "deduplication") {
    if (m == "GET") co_return co_await get_policy(ns, "deduplicationEnabled", Unset::kNoContent);
    if (m == "POST") co_return co_await set_deduplication(ns, req);
    if (m == "DELETE") co_return co_await remove_policy(ns, "deduplicationEnabled");
  } else if (op == "replication") {
    if (m == "GET") co_return co_await get_policy(ns, "replication_clusters", Unset::kEmptyList);
    if (m == "POST") co_return co_await set_replication(ns, req);
  } else if (op == "permissions") {
    if (m == "GET") co_return co_await get_policy(ns, "auth_policies", Unset::kEmptyObject);
  } else if (op == "bundles") {
    if (m == "GET") co_return co_await get_policy(ns, "bundles", Unset::kEmptyObject);
  } else if (op == "topics") {
    if (m == "GET") co_return co_await list_topics(ns, req);
  } else {
    co_return error(404, "Not Found");
  }
  co_return method_not_allowed();
}

Task<Response> AdminResources::list_namespaces(std::string tenant) {
  if (!valid_name(tenant)) co_return error(404, kNoTenant);
  auto exists = co_await configuration().exists(tenant_path(tenant));
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoTenant);
  auto names = co_await configuration().children(tenant_path(tenant));
  if (!names.ok()) co_return store_error(names.status());
  Json out = Json::array();
  for (const std::string& name : *names) out.push_back(tenant + "/" + name);
  co_return ok(out);
}

Task<Response> AdminResources::get_policies(NamespaceName ns) {
  auto loaded = co_await load(configuration(), ns.policies_path());
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoNamespace);
  co_return ok(policies_view(std::move(node->value), options_.default_number_of_namespace_bundles));
}

Task<Response> AdminResources::get_policy(NamespaceName ns, const char* field, Unset unset) {
  auto loaded = co_await load(configuration(), ns.policies_path());
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoNamespace);
  const std::string_view name = field;
  if (name == "bundles") {
    co_return ok(effective_bundles(node->value, options_.default_number_of_namespace_bundles));
  }
  if (name == "auth_policies") {
    // GET .../permissions: the namespace-wide grants, role -> actions.
    const Json& grants = member(member(node->value, "auth_policies"), "namespace_auth");
    co_return ok(grants.is_object() ? grants : Json::object());
  }
  const Json& value = member(node->value, field);
  if (!value.is_null()) co_return ok(value);
  if (unset == Unset::kEmptyObject) co_return ok(Json::object());
  if (unset == Unset::kEmptyList) co_return ok(Json::array());
  co_return no_content();  // Pulsar answers an unset policy (null) with 204
}

Task<Response> AdminResources::update_policies(const NamespaceName& ns, const Mutation& mutate) {
  co_return co_await update_node(configuration(), ns.policies_path(), mutate, kNoNamespace);
}

Task<Response> AdminResources::remove_policy(NamespaceName ns, const char* field) {
  const Mutation remove = [field](Json& p) -> std::optional<Response> {
    p.erase(field);
    return std::nullopt;
  };
  co_return co_await update_policies(ns, remove);
}

Task<Response> AdminResources::set_retention(NamespaceName ns, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_retention(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const Json& retention = std::get<0>(parsed);
  const Mutation set = [&retention](Json& p) -> std::optional<Response> {
    if (!quota_fits_retention(member(p, "backlog_quota_map"), retention)) {
      return error(412, kRetentionBelowQuota);
    }
    p["retention_policies"] = retention;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

Task<Response> AdminResources::set_message_ttl(NamespaceName ns, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto ttl = integer_in(std::get<0>(body), kInt32Min, kInt32Max);
  if (!ttl) co_return error(400, "The message TTL must be a 32-bit integer (seconds)");
  if (*ttl < 0) co_return error(412, "Invalid value for message TTL");
  const int64_t seconds = *ttl;
  const Mutation set = [seconds](Json& p) -> std::optional<Response> {
    p["message_ttl_in_seconds"] = seconds;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

// The backlogQuotaType query parameter (default destination_storage), or nullopt when unknown.
std::optional<std::string> quota_type(const Request& req) {
  auto it = req.query.find("backlogQuotaType");
  if (it == req.query.end() || it->second.empty()) return std::string("destination_storage");
  if (!one_of(kQuotaTypes, it->second)) return std::nullopt;
  return it->second;
}

Task<Response> AdminResources::set_backlog_quota(NamespaceName ns, const Request& req) {
  auto type = quota_type(req);
  if (!type) co_return error(400, "backlogQuotaType must be destination_storage or message_age");
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_backlog_quota(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const Json& quota = std::get<0>(parsed);
  const Mutation set = [&quota, &type](Json& p) -> std::optional<Response> {
    Json quotas = member(p, "backlog_quota_map");
    if (!quotas.is_object()) quotas = Json::object();
    quotas[*type] = quota;
    if (!quota_fits_retention(quotas, member(p, "retention_policies"))) {
      return error(412, kQuotaAboveRetention);
    }
    p["backlog_quota_map"] = std::move(quotas);
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

Task<Response> AdminResources::remove_backlog_quota(NamespaceName ns, const Request& req) {
  auto type = quota_type(req);
  if (!type) co_return error(400, "backlogQuotaType must be destination_storage or message_age");
  const Mutation remove = [&type](Json& p) -> std::optional<Response> {
    if (p.contains("backlog_quota_map") && p["backlog_quota_map"].is_object()) {
      p["backlog_quota_map"].erase(*type);
    }
    return std::nullopt;
  };
  co_return co_await update_policies(ns, remove);
}

Task<Response> AdminResources::set_deduplication(NamespaceName ns, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  if (!std::get<0>(body).is_boolean()) co_return error(400, "The body must be true or false");
  const bool enabled = std::get<0>(body).get<bool>();
  const Mutation set = [enabled](Json& p) -> std::optional<Response> {
    p["deduplicationEnabled"] = enabled;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

// Pulsar's checks of replication clusters: not "global", known (403 otherwise), allowed by the
// tenant (403 otherwise).
Task<std::optional<Response>> AdminResources::check_replication_clusters(
    const std::string& tenant, const std::vector<std::string>& clusters) {
  if (contains(clusters, "global")) {
    co_return error(412, "Cannot specify global in the list of replication clusters");
  }
  auto loaded = co_await load(configuration(), tenant_path(tenant));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoTenant);
  const TenantInfo info = stored_tenant(node->value);
  for (const std::string& c : clusters) {
    bool found = false;
    if (valid_name(c)) {
      auto exists = co_await configuration().exists(cluster_path(c));
      if (!exists.ok()) co_return store_error(exists.status());
      found = *exists;
    }
    if (!found) co_return error(403, fmt::format("Invalid cluster id: {}", c));
    if (!contains(info.allowed_clusters, c)) {
      co_return error(403, fmt::format("Cluster [{}] is not in the list of allowed clusters list "
                                       "for tenant [{}]",
                                       c, tenant));
    }
  }
  co_return std::nullopt;
}

Task<Response> AdminResources::set_replication(NamespaceName ns, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_string_list(std::get<0>(body), "The replication clusters");
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const std::vector<std::string>& clusters = std::get<0>(parsed);
  if (clusters.empty()) co_return error(412, "ClusterIds should not be null or empty");
  auto exists = co_await configuration().exists(ns.policies_path());
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoNamespace);
  if (auto refused = co_await check_replication_clusters(ns.tenant, clusters)) {
    co_return std::move(*refused);
  }
  const Json list = clusters;
  const Mutation set = [&list](Json& p) -> std::optional<Response> {
    p["replication_clusters"] = list;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, set);
}

Task<Response> AdminResources::grant_permission(NamespaceName ns, std::string role,
                                                const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto parsed = parse_auth_actions(std::get<0>(body));
  if (auto* r = std::get_if<Response>(&parsed)) co_return std::move(*r);
  const Json actions = std::get<0>(parsed);
  const Mutation grant = [&role, &actions](Json& p) -> std::optional<Response> {
    Json& auth = p["auth_policies"];
    if (!auth.is_object()) auth = default_policies()["auth_policies"];
    Json& grants = auth["namespace_auth"];
    if (!grants.is_object()) grants = Json::object();
    grants[role] = actions;
    return std::nullopt;
  };
  co_return co_await update_policies(ns, grant);
}

Task<Response> AdminResources::revoke_permission(NamespaceName ns, std::string role) {
  const Mutation revoke = [&role](Json& p) -> std::optional<Response> {
    auto auth = p.find("auth_policies");
    if (auth == p.end() || !auth->is_object()) return std::nullopt;
    auto grants = auth->find("namespace_auth");
    if (grants != auth->end() && grants->is_object()) grants->erase(role);
    return std::nullopt;
  };
  co_return co_await update_policies(ns, revoke);
}

Task<Response> AdminResources::list_topics(NamespaceName ns, const Request& req) {
  std::string mode = "PERSISTENT";
  if (auto it = req.query.find("mode"); it != req.query.end() && !it->second.empty()) {
    mode = it->second;
  }
  if (mode != "PERSISTENT" && mode != "NON_PERSISTENT" && mode != "ALL") {
    co_return error(400, "mode must be PERSISTENT, NON_PERSISTENT or ALL");
  }
  auto exists = co_await configuration().exists(ns.policies_path());
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoNamespace);
  Json out = Json::array();
  if (mode == "NON_PERSISTENT") co_return ok(out);  // non-persistent topics are not supported
  const std::string ledgers_dir = ns.ledgers_dir() + "/persistent";
  auto ledgers = co_await cluster_store().children(ledgers_dir);
  if (!ledgers.ok()) co_return store_error(ledgers.status());
  for (const std::string& encoded : *ledgers) {
    auto local = http::url_decode(encoded);
    out.push_back(fmt::format("persistent://{}/{}", ns.full(), local ? *local : encoded));
  }
  co_return ok(out);
}

Task<Response> AdminResources::create_namespace(NamespaceName ns, const Request& req) {
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto policies = new_namespace_policies(std::get<0>(body), options_);
  if (auto* r = std::get_if<Response>(&policies)) co_return std::move(*r);
  const Json& p = std::get<0>(policies);
  const std::vector<std::string> clusters = stored_strings(member(p, "replication_clusters"));
  if (auto refused = co_await check_replication_clusters(ns.tenant, clusters)) {
    co_return std::move(*refused);
  }
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await configuration().put(ns.policies_path(), dump(p), create);
  if (!made.ok()) {
    if (made.status().is(Errc::kBadVersion)) co_return error(409, "Namespace already exists");
    if (made.status().is(Errc::kNotFound)) co_return error(404, kNoTenant);
    co_return store_error(made.status());
  }
  log_.info("created namespace {}", ns.full());
  co_return no_content();
}

Task<Response> AdminResources::delete_namespace(NamespaceName ns, const Request& req) {
  if (auto force = req.query.find("force"); force != req.query.end() && force->second == "true") {
    co_return error(405, "Broker doesn't allow forced deletion of namespaces");
  }
  const std::string path = ns.policies_path();
  const std::string ledgers_dir = ns.ledgers_dir() + "/persistent";
  const std::string partitioned_dirs[] = {ns.partitioned_dir() + "/persistent",
                                          ns.partitioned_dir() + "/non-persistent"};
  bool deleted = false;
  for (int attempt = 0; attempt < kMaxCasAttempts && !deleted; ++attempt) {
    auto got = co_await configuration().get(path);
    if (!got.ok()) co_return store_error(got.status());
    if (!got->has_value()) co_return error(404, kNoNamespace);
    const int64_t version = (*got)->stat.version;
    // Topics: managed ledgers (cluster store), partitioned-topic metadata (configuration).
    auto ledgers = co_await cluster_store().children(ledgers_dir);
    if (!ledgers.ok()) co_return store_error(ledgers.status());
    if (!ledgers->empty()) co_return error(409, "Cannot delete non empty namespace");
    for (const std::string& dir : partitioned_dirs) {
      auto partitioned = co_await configuration().children(dir);
      if (!partitioned.ok()) co_return store_error(partitioned.status());
      if (!partitioned->empty()) co_return error(409, "Cannot delete non empty namespace");
    }
    // A topic created between the check and the removal is not seen: the broker refuses new
    // topics once the node is gone, but one loading right now may still create its ledger.
    Status st = co_await configuration().remove(path, version);
    if (st.ok()) {
      deleted = true;
    } else if (st.is(Errc::kNotFound)) {
      co_return error(404, kNoNamespace);
    } else if (st.code() == metadata::Error::kNotEmpty) {
      co_return error(409, "Cannot delete non empty namespace");
    } else if (!st.is(Errc::kBadVersion)) {
      co_return store_error(st);
    }
  }
  if (!deleted) co_return error(409, "Concurrent modification");
  // Leftover empty directories; anything that appeared in them meanwhile stays.
  (void)co_await cluster_store().remove(ledgers_dir);
  (void)co_await cluster_store().remove(ns.ledgers_dir());
  for (const std::string& dir : partitioned_dirs) (void)co_await configuration().remove(dir);
  (void)co_await configuration().remove(ns.partitioned_dir());
  log_.info("deleted namespace {}", ns.full());
  co_return no_content();
}

Task<OrResponse<std::vector<std::string>>> AdminResources::namespaces_using(std::string cluster,
                                                                            std::string tenant) {
  std::vector<std::string> tenants;
  if (!tenant.empty()) {
    tenants.push_back(tenant);
  } else {
    auto names = co_await configuration().children("/admin/policies");
    if (!names.ok()) co_return store_error(names.status());
    tenants = std::move(*names);
  }
  std::vector<std::string> users;
  for (const std::string& t : tenants) {
    auto names = co_await configuration().children(tenant_path(t));
    if (!names.ok()) co_return store_error(names.status());
    for (const std::string& local : *names) {
      NamespaceName ns{t, local};
      auto loaded = co_await load(configuration(), ns.policies_path());
      if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
      auto& node = std::get<0>(loaded);
      if (node && contains(stored_strings(member(node->value, "replication_clusters")), cluster)) {
        users.push_back(ns.full());
      }
    }
  }
  co_return users;
}

}  // namespace

std::vector<std::string> bundle_boundaries(int32_t num_bundles) {
  return NamespaceBundles::equal(num_bundles).boundaries();
}

void add_admin_resource_routes(http::HttpServer& web, metadata::MetadataStores stores,
                               AdminResourcesOptions options) {
  auto self = std::make_shared<AdminResources>(std::move(stores), std::move(options));
  // Each handler holds `self`; the request outlives the coroutine (the server awaits it).
  web.route("GET", "/admin/v2/clusters",
            [self](const Request&) -> Task<Response> { return self->list_clusters(); });
  web.route("GET", "/admin/v2/tenants",
            [self](const Request&) -> Task<Response> { return self->list_tenants(); });
  for (const char* method : {"GET", "PUT", "POST", "DELETE"}) {
    web.route_prefix(method, std::string(kClustersPrefix),
                     [self](const Request& req) -> Task<Response> { return self->clusters(req); });
    web.route_prefix(method, std::string(kTenantsPrefix),
                     [self](const Request& req) -> Task<Response> { return self->tenants(req); });
    web.route_prefix(
        method, std::string(kNamespacesPrefix),
        [self](const Request& req) -> Task<Response> { return self->namespaces(req); });
  }
}

}  // namespace magnetar::broker
