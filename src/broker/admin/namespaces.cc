// /admin/v2/namespaces/{tenant}[/{namespace}]: a tenant's namespaces, a namespace's Policies
// node (/admin/policies/{tenant}/{namespace}) as a whole and its topics. Every route needs an
// admin of the tenant, but the topic list, which a namespace-level consume grant allows
// (GET_TOPICS), as in Pulsar. The per-policy routes are in namespace_policies.cc, the
// permission grants in permissions.cc, the bundle operations in namespace_bundles.cc.

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>

#include "broker/admin/admin_nodes.h"
#include "broker/admin/admin_routes.h"
#include "broker/admin/policies_json.h"
#include "broker/service/topic_registry.h"
#include "common/logging.h"

namespace magnetar::broker::admin {

namespace {

using http::Action;
using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

class Namespaces {
 public:
  Namespaces(std::shared_ptr<const AdminContext> ctx, std::shared_ptr<const BrokerContext> broker)
      : ctx_(std::move(ctx)), broker_(std::move(broker)) {}

  Task<Response> list_namespaces(std::string tenant);
  Task<Response> get_policies(NamespaceName ns);
  Task<Response> create_namespace(NamespaceName ns, const Request& req);
  Task<Response> delete_namespace(NamespaceName ns, const Request& req);
  Task<Response> list_topics(NamespaceName ns, const Request& req);

 private:
  metadata::MetadataStore& configuration() const { return ctx_->configuration(); }
  metadata::MetadataStore& cluster_store() const { return ctx_->cluster_store(); }

  const std::shared_ptr<const AdminContext> ctx_;
  const std::shared_ptr<const BrokerContext> broker_;  // null: no broker behind this API
  log::Logger log_{"admin"};
};

Task<Response> Namespaces::list_namespaces(std::string tenant) {
  if (!valid_name(tenant)) co_return error(404, kNoTenant);
  auto exists = co_await configuration().exists(tenant_path(tenant));
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoTenant);
  auto names = co_await configuration().children(tenant_path(tenant));
  if (!names.ok()) co_return store_error(names.status());
  Json out = Json::array();
  for (const std::string& name : *names) out.push_back(tenant + "/" + name);
  co_return ok_json(out);
}

Task<Response> Namespaces::get_policies(NamespaceName ns) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto loaded = co_await load(configuration(), ns.policies_path());
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoNamespace);
  co_return ok_json(
      policies_view(std::move(node->value), ctx_->options.default_number_of_namespace_bundles));
}

Task<Response> Namespaces::list_topics(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
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
  if (broker_) {
    // With its non-persistent topics (topics_of_namespace says which).
    using Listed = TopicRegistry::Listed;
    const Listed listed = mode == "NON_PERSISTENT" ? Listed::kNonPersistent
                          : mode == "ALL"          ? Listed::kAll
                                                   : Listed::kPersistent;
    auto topics = co_await broker_->services.topics.topics_of_namespace(ns.full(), listed);
    if (!topics.ok()) co_return store_error(topics.status());
    co_return ok_json(Json(*topics));
  }
  // Without a broker, no non-persistent topic is known.
  if (mode == "NON_PERSISTENT") co_return ok_json(Json::array());
  auto topics = co_await namespace_topics(ctx_->stores, ns.full());
  if (!topics.ok()) co_return store_error(topics.status());
  co_return ok_json(Json(*topics));
}

Task<Response> Namespaces::create_namespace(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  auto policies = new_namespace_policies(std::get<0>(body), ctx_->options);
  if (auto* r = std::get_if<Response>(&policies)) co_return std::move(*r);
  const Json& p = std::get<0>(policies);
  const std::vector<std::string> clusters = stored_strings(member(p, "replication_clusters"));
  if (auto refused = co_await check_replication_clusters(configuration(), ns.tenant, clusters)) {
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

Task<Response> Namespaces::delete_namespace(NamespaceName ns, const Request& req) {
  if (!ns.valid()) co_return invalid_namespace_name();
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

}  // namespace

void add_namespaces(http::Router& router, std::shared_ptr<const AdminContext> ctx,
                    std::shared_ptr<const BrokerContext> broker) {
  auto self = std::make_shared<Namespaces>(std::move(ctx), std::move(broker));
  const std::string ns = "/admin/v2/namespaces/{tenant}/{namespace}";
  const Permission admin = Permission::tenant_admin();
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", "/admin/v2/namespaces/{tenant}", admin,
             [self](const Request&, const PathParams& p) {
               return self->list_namespaces(p.at("tenant"));
             });
  router.add("GET", ns, admin, [self](const Request&, const PathParams& p) {
    return self->get_policies(namespace_of(p));
  });
  router.add("PUT", ns, admin, [self](const Request& req, const PathParams& p) {
    return self->create_namespace(namespace_of(p), req);
  });
  router.add("DELETE", ns, admin, [self](const Request& req, const PathParams& p) {
    return self->delete_namespace(namespace_of(p), req);
  });
  router.add("GET", ns + "/topics", Permission::namespace_op(Action::kConsume, "GET_TOPICS"),
             [self](const Request& req, const PathParams& p) {
               return self->list_topics(namespace_of(p), req);
             });
}

Prefix namespaces_prefix(bool broker) {
  Prefix prefix;
  prefix.path = "/admin/v2/namespaces/";
  prefix.methods = {"GET", "PUT", "POST", "DELETE"};
  prefix.malformed = error(400, "Malformed URL");
  prefix.check = [broker](const Request& req,
                          const std::vector<std::string>& parts) -> std::optional<Response> {
    // Names are checked before anything else, whatever the operation or method.
    if (parts.size() >= 2 && !NamespaceName{parts[0], parts[1]}.valid()) {
      return invalid_namespace_name();
    }
    if (parts.size() == 4 && parts[2] == "permissions" && !valid_role(parts[3])) {
      return error(412, "Invalid role name");
    }
    if (!has_empty_segment(parts)) return std::nullopt;
    // An empty bundle name is an invalid bundle range (after the method check).
    const bool bundle_op = broker && parts.size() >= 4 && parts[2].empty() &&
                           ((parts.size() == 4 && (parts[3] == "unload" || parts[3] == "split")) ||
                            (parts.size() <= 5 && parts[3] == "clearBacklog"));
    if (bundle_op) {
      if (req.method != (parts[3] == "clearBacklog" ? "POST" : "PUT")) return method_not_allowed();
      return error(412, "Invalid bundle range ");
    }
    return not_found();
  };
  return prefix;
}

}  // namespace magnetar::broker::admin
