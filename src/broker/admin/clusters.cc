// /admin/v2/clusters: the clusters of the configuration store (ClusterData at
// /admin/clusters/{cluster}). Reading the list needs an authenticated principal, everything
// else a super user, as in Pulsar. A cluster some namespace replicates to cannot be deleted.

#include <fmt/format.h>

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

class Clusters {
 public:
  explicit Clusters(std::shared_ptr<const AdminContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> list_clusters();
  Task<Response> get_cluster(std::string cluster);
  Task<Response> create_cluster(std::string cluster, const Request& req);
  Task<Response> update_cluster(std::string cluster, const Request& req);
  Task<Response> delete_cluster(std::string cluster);
  Task<Response> get_peers(std::string cluster);
  Task<Response> set_peers(std::string cluster, const Request& req);

 private:
  metadata::MetadataStore& configuration() const { return ctx_->configuration(); }

  const std::shared_ptr<const AdminContext> ctx_;
  log::Logger log_{"admin"};
};

Task<Response> Clusters::list_clusters() {
  auto names = co_await configuration().children("/admin/clusters");
  if (!names.ok()) co_return store_error(names.status());
  Json out = Json::array();
  for (const std::string& name : *names) {
    if (name != "global") out.push_back(name);
  }
  co_return ok_json(out);
}

Task<Response> Clusters::get_cluster(std::string cluster) {
  if (!valid_name(cluster)) co_return error(404, kNoCluster);
  auto loaded = co_await load(configuration(), cluster_path(cluster));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoCluster);
  co_return ok_json(cluster_view(std::move(node->value)));
}

Task<Response> Clusters::create_cluster(std::string cluster, const Request& req) {
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

Task<Response> Clusters::update_cluster(std::string cluster, const Request& req) {
  if (!valid_name(cluster)) co_return error(404, kNoCluster);
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

Task<Response> Clusters::delete_cluster(std::string cluster) {
  if (!valid_name(cluster)) co_return error(404, kNoCluster);
  auto exists = co_await configuration().exists(cluster_path(cluster));
  if (!exists.ok()) co_return store_error(exists.status());
  if (!*exists) co_return error(404, kNoCluster);
  auto users = co_await namespaces_using(configuration(), cluster, "");
  if (auto* r = std::get_if<Response>(&users)) co_return std::move(*r);
  // Pulsar's text, and which namespaces still replicate there (Pulsar deletes the cluster
  // and leaves their replication broken).
  const auto& namespaces = std::get<0>(users);
  if (!namespaces.empty()) {
    co_return error(412, fmt::format("Cluster not empty: namespaces {} replicate to it",
                                     fmt::join(namespaces, ", ")));
  }
  Status st = co_await configuration().remove_recursive(cluster_path(cluster));
  if (!st.ok()) co_return store_error(st);
  log_.info("deleted cluster {}", cluster);
  co_return no_content();
}

Task<Response> Clusters::get_peers(std::string cluster) {
  if (!valid_name(cluster)) co_return error(404, kNoCluster);
  auto loaded = co_await load(configuration(), cluster_path(cluster));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  auto& node = std::get<0>(loaded);
  if (!node) co_return error(404, kNoCluster);
  const Json& peers = member(node->value, "peerClusterNames");
  if (!peers.is_array()) co_return no_content();
  co_return ok_json(peers);
}

Task<Response> Clusters::set_peers(std::string cluster, const Request& req) {
  if (!valid_name(cluster)) co_return error(404, kNoCluster);
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

}  // namespace

void add_clusters(http::Router& router, std::shared_ptr<const AdminContext> ctx) {
  auto self = std::make_shared<Clusters>(std::move(ctx));
  const std::string one = "/admin/v2/clusters/{cluster}";
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", "/admin/v2/clusters", Permission::authenticated(),
             [self](const Request&, const PathParams&) { return self->list_clusters(); });
  router.add("GET", one, Permission::super_user(), [self](const Request&, const PathParams& p) {
    return self->get_cluster(p.at("cluster"));
  });
  router.add("PUT", one, Permission::super_user(), [self](const Request& req, const PathParams& p) {
    return self->create_cluster(p.at("cluster"), req);
  });
  router.add("POST", one, Permission::super_user(),
             [self](const Request& req, const PathParams& p) {
               return self->update_cluster(p.at("cluster"), req);
             });
  router.add("DELETE", one, Permission::super_user(), [self](const Request&, const PathParams& p) {
    return self->delete_cluster(p.at("cluster"));
  });
  router.add(
      "GET", one + "/peers", Permission::super_user(),
      [self](const Request&, const PathParams& p) { return self->get_peers(p.at("cluster")); });
  router.add("POST", one + "/peers", Permission::super_user(),
             [self](const Request& req, const PathParams& p) {
               return self->set_peers(p.at("cluster"), req);
             });
}

Prefix clusters_prefix() {
  Prefix prefix;
  prefix.path = "/admin/v2/clusters/";
  prefix.methods = {"GET", "PUT", "POST", "DELETE"};
  prefix.malformed = error(400, "Malformed URL");
  prefix.check = [](const Request&,
                    const std::vector<std::string>& parts) -> std::optional<Response> {
    // An invalid name is an unknown cluster, whatever the method.
    if (parts.size() == 2 && parts[1] == "peers" && !valid_name(parts[0])) {
      return error(404, kNoCluster);
    }
    if (has_empty_segment(parts)) return not_found();
    return std::nullopt;
  };
  return prefix;
}

}  // namespace magnetar::broker::admin
