#include "broker/admin/policies_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "auth/authorization.h"
#include "broker/namespace/bundles.h"

namespace magnetar::broker::admin {

using http::Request;
using http::Response;

namespace {

constexpr int64_t kMaxNumBundles = 4096;  // keeps a Policies node far below the value limit
constexpr uint64_t kHashRange = 0x100000000ULL;
constexpr int64_t kBytesPerMb = 1024 * 1024;

// An integer member of a stored object, or `fallback`.
int64_t int_field(const Json& obj, const char* key, int64_t fallback) {
  auto v = integer_in(member(obj, key), kInt64Min, kInt64Max);
  return v ? *v : fallback;
}

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

constexpr const char* kQuotaPolicies[] = {"producer_request_hold", "producer_exception",
                                          "consumer_backlog_eviction"};
constexpr const char* kQuotaTypes[] = {"destination_storage", "message_age"};

template <size_t N>
bool one_of(const char* const (&set)[N], std::string_view s) {
  return std::find(std::begin(set), std::end(set), s) != std::end(set);
}

Json bundles_json(int64_t num_bundles) {
  return {{"boundaries", bundle_boundaries(static_cast<int32_t>(num_bundles))},
          {"numBundles", num_bundles}};
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

}  // namespace

// --- Reading JSON ---------------------------------------------------------------------------

const Json& member(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

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

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

OrResponse<Json> parse_body(const Request& req) {
  if (blank(req.body)) return Json();
  Json j = Json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return error(400, "Cannot parse the request body as JSON");
  return j;
}

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

std::vector<std::string> stored_strings(const Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const Json& e : j) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

// --- ClusterData ----------------------------------------------------------------------------

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

Json cluster_view(Json data) {
  for (const char* key : kClusterBoolFields) {
    if (!data.contains(key)) data[key] = false;
  }
  return data;
}

// --- TenantInfo -----------------------------------------------------------------------------

Json TenantInfo::to_json() const {
  return {{"adminRoles", admin_roles}, {"allowedClusters", allowed_clusters}};
}

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

// --- Policies -------------------------------------------------------------------------------

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

std::optional<std::string> backlog_quota_type(const http::Request& req) {
  auto it = req.query.find("backlogQuotaType");
  if (it == req.query.end() || it->second.empty()) return std::string("destination_storage");
  if (!is_backlog_quota_type(it->second)) return std::nullopt;
  return it->second;
}

OrResponse<std::vector<std::string>> parse_auth_actions(const Json& j) {
  if (j.is_null()) return error(400, "A list of actions is required");
  auto list = parse_string_list(j, "actions");
  if (auto* r = std::get_if<Response>(&list)) return std::move(*r);
  std::vector<std::string> actions = std::move(std::get<0>(list));
  for (const std::string& a : actions) {
    if (!auth::parse_auth_action(a)) {
      return error(400, fmt::format("Illegal auth action '{}'. Possible values: {}",
                                    a.substr(0, 64), auth::auth_action_names()));
    }
  }
  std::sort(actions.begin(), actions.end());
  return actions;
}

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

bool is_backlog_quota_type(std::string_view s) {
  return one_of(kQuotaTypes, s);
}

const char* const kRetentionBelowQuota =
    "Retention Quota must exceed configured backlog quota for namespace.";
const char* const kQuotaAboveRetention =
    "Backlog Quota exceeds configured retention quota for namespace. Please increase retention "
    "quota and retry";

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

}  // namespace magnetar::broker::admin

namespace magnetar::broker {

std::vector<std::string> bundle_boundaries(int32_t num_bundles) {
  return NamespaceBundles::equal(num_bundles).boundaries();
}

}  // namespace magnetar::broker
