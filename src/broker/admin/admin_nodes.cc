#include "broker/admin/admin_nodes.h"

#include <fmt/format.h>

#include <algorithm>

#include "broker/admin/policies_json.h"
#include "broker/config/store_paths.h"

namespace magnetar::broker::admin {

using http::Response;

bool valid_name(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '=' || c == ':' || c == '.';
  });
}

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

bool NamespaceName::valid() const {
  return valid_name(tenant) && valid_name(local);
}

NamespaceName namespace_of(const http::PathParams& p) {
  return NamespaceName{p.at("tenant"), p.at("namespace")};
}

Response invalid_namespace_name() {
  return error(412, "Namespace name is not valid");
}

std::string NamespaceName::policies_path() const {
  return namespace_policies_path(tenant + "/" + local);
}

std::string NamespaceName::ledgers_dir() const {
  return fmt::format("/managed-ledgers/{}/{}", tenant, local);
}

std::string NamespaceName::partitioned_dir() const {
  return fmt::format("/admin/partitioned-topics/{}/{}", tenant, local);
}

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

Task<OrResponse<std::vector<std::string>>> namespaces_using(metadata::MetadataStore& configuration,
                                                            std::string cluster,
                                                            std::string tenant) {
  std::vector<std::string> tenants;
  if (!tenant.empty()) {
    tenants.push_back(tenant);
  } else {
    auto names = co_await configuration.children("/admin/policies");
    if (!names.ok()) co_return store_error(names.status());
    tenants = std::move(*names);
  }
  std::vector<std::string> users;
  for (const std::string& t : tenants) {
    auto names = co_await configuration.children(tenant_path(t));
    if (!names.ok()) co_return store_error(names.status());
    for (const std::string& local : *names) {
      NamespaceName ns{t, local};
      auto loaded = co_await load(configuration, ns.policies_path());
      if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
      auto& node = std::get<0>(loaded);
      if (node && contains(stored_strings(member(node->value, "replication_clusters")), cluster)) {
        users.push_back(ns.full());
      }
    }
  }
  co_return users;
}

Task<std::optional<Response>> check_replication_clusters(metadata::MetadataStore& configuration,
                                                         const std::string& tenant,
                                                         const std::vector<std::string>& clusters) {
  if (contains(clusters, "global")) {
    co_return error(412, "Cannot specify global in the list of replication clusters");
  }
  auto loaded = co_await load(configuration, tenant_path(tenant));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoTenant);
  const TenantInfo info = stored_tenant(node->value);
  for (const std::string& c : clusters) {
    bool found = false;
    if (valid_name(c)) {
      auto exists = co_await configuration.exists(cluster_path(c));
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

}  // namespace magnetar::broker::admin
