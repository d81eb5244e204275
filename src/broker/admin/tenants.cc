// /admin/v2/tenants: the tenants of the configuration store (TenantInfo at
// /admin/policies/{tenant}). Reading the list needs an authenticated principal, reading a
// tenant its admin, creating, changing or deleting one a super user, as in Pulsar. A tenant
// with namespaces cannot be deleted; a cluster leaves a tenant only when none of its
// namespaces replicates to it.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "broker/admin/admin_nodes.h"
#include "broker/admin/admin_routes.h"
#include "broker/admin/policies_json.h"
#include "broker/config/store_paths.h"
#include "common/logging.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

class Tenants {
 public:
  explicit Tenants(std::shared_ptr<const AdminContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> list_tenants();
  Task<Response> get_tenant(std::string tenant);
  Task<Response> create_tenant(std::string tenant, const Request& req);
  Task<Response> update_tenant(std::string tenant, const Request& req);
  Task<Response> delete_tenant(std::string tenant, const Request& req);

 private:
  Task<std::optional<Response>> check_allowed_clusters(const TenantInfo& info);
  metadata::MetadataStore& configuration() const { return ctx_->configuration(); }
  metadata::MetadataStore& cluster_store() const { return ctx_->cluster_store(); }

  const std::shared_ptr<const AdminContext> ctx_;
  log::Logger log_{"admin"};
};

Task<Response> Tenants::list_tenants() {
  auto names = co_await configuration().children("/admin/policies");
  if (!names.ok()) co_return store_error(names.status());
  co_return ok_json(Json(*names));
}

Task<Response> Tenants::get_tenant(std::string tenant) {
  if (!valid_name(tenant)) co_return error(404, kNoTenant);
  auto loaded = co_await load(configuration(), tenant_path(tenant));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoTenant);
  Json view = std::move(node->value);
  for (const char* key : {"adminRoles", "allowedClusters"}) {
    if (!member(view, key).is_array()) view[key] = Json::array();
  }
  co_return ok_json(view);
}

// Pulsar's validateClusters: at least one cluster, none blank, every one known ("global" is).
Task<std::optional<Response>> Tenants::check_allowed_clusters(const TenantInfo& info) {
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

Task<Response> Tenants::create_tenant(std::string tenant, const Request& req) {
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

Task<Response> Tenants::update_tenant(std::string tenant, const Request& req) {
  if (!valid_name(tenant)) co_return error(404, kNoTenant);
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
    auto users = co_await namespaces_using(configuration(), old, tenant);
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

Task<Response> Tenants::delete_tenant(std::string tenant, const Request& req) {
  if (!valid_name(tenant)) co_return error(404, kNoTenant);
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

}  // namespace

void add_tenants(http::Router& router, std::shared_ptr<const AdminContext> ctx) {
  auto self = std::make_shared<Tenants>(std::move(ctx));
  const std::string one = "/admin/v2/tenants/{tenant}";
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", "/admin/v2/tenants", Permission::authenticated(),
             [self](const Request&, const PathParams&) { return self->list_tenants(); });
  router.add("GET", one, Permission::tenant_admin(), [self](const Request&, const PathParams& p) {
    return self->get_tenant(p.at("tenant"));
  });
  router.add("PUT", one, Permission::super_user(), [self](const Request& req, const PathParams& p) {
    return self->create_tenant(p.at("tenant"), req);
  });
  router.add("POST", one, Permission::super_user(),
             [self](const Request& req, const PathParams& p) {
               return self->update_tenant(p.at("tenant"), req);
             });
  router.add("DELETE", one, Permission::super_user(),
             [self](const Request& req, const PathParams& p) {
               return self->delete_tenant(p.at("tenant"), req);
             });
}

Prefix tenants_prefix() {
  Prefix prefix;
  prefix.path = "/admin/v2/tenants/";
  prefix.methods = {"GET", "PUT", "POST", "DELETE"};
  prefix.malformed = error(400, "Malformed URL");
  prefix.check = [](const Request&,
                    const std::vector<std::string>& parts) -> std::optional<Response> {
    if (has_empty_segment(parts)) return not_found();
    return std::nullopt;
  };
  return prefix;
}

}  // namespace magnetar::broker::admin
