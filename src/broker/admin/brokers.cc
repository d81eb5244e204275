// /admin/v2/brokers: the brokers of this cluster, as Pulsar's BrokersBase answers them.
//
//   GET /admin/v2/brokers[/{cluster}]                       the registered brokers' ids
//   GET /admin/v2/brokers/health                            200 "ok" while serving
//   GET /admin/v2/brokers/leaderBroker                      {"serviceUrl", ...} of the leader
//   GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces  bundles owned by {broker} (307
//                                                           to another registered broker)
//   GET /admin/v2/brokers/configuration/runtime             every key of this broker and its
//                                                           value in force (secrets masked,
//                                                           unlike Pulsar)
//   GET /admin/v2/brokers/configuration                     the dynamic keys
//   GET /admin/v2/brokers/configuration/values              the cluster's dynamic overrides
//   POST /admin/v2/brokers/configuration/{key}/{value}      overrides a dynamic key (checked:
//                                                           412 with why, where Pulsar stores
//                                                           any value)
//   DELETE /admin/v2/brokers/configuration/{key}            drops an override
//   GET /admin/v2/brokers/internal-configuration            the metadata stores' URLs
//   GET /admin/v2/brokers/ready, /version                   "ok" once serving; the version
//
// Without a load manager (standalone) this broker is the only one and the leader. Every route
// needs a super user, as in Pulsar.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_nodes.h"
#include "broker/admin/admin_routes.h"
#include "broker/config/dynamic_config.h"
#include "broker/config/broker_config.h"
#include "broker/namespace/load_manager.h"
#include "broker/namespace/namespace_service.h"
#include "broker/service/topic_registry.h"
#include "common/config.h"
#include "common/version.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

// "host:port" of an http:// URL.
std::string broker_id(const std::string& http_url) {
  return http_url.substr(http_url.find("://") + 3);
}

class Brokers {
 public:
  explicit Brokers(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> active_brokers();
  Task<Response> cluster_brokers(std::string cluster);
  Task<Response> health();
  Task<Response> leader();
  Task<Response> owned_namespaces(std::string cluster, std::string broker, const Request& req);
  const BrokerConfig& config() const { return broker().config; }
  const DynamicConfig& dynamic() const { return broker().topics.dynamic_config(); }
  Task<Response> overrides();
  Task<Response> set_override(std::string key, std::string value);
  Task<Response> remove_override(std::string key);

 private:
  const BrokerServices& broker() const { return ctx_->services; }
  LoadManager* load() const { return ctx_->load; }

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> Brokers::active_brokers() {
  if (load() == nullptr) {
    co_return ok_json(Json::array({broker_id(broker().namespaces.self().http_url)}));
  }
  auto ids = co_await load()->brokers();
  if (!ids.ok()) co_return broker_error(ids.status());
  co_return ok_json(Json(*ids));
}

Task<Response> Brokers::cluster_brokers(std::string cluster) {
  if (cluster != broker().config.cluster_name) {
    co_return error(404, fmt::format("Cluster {} does not exist", cluster));
  }
  co_return co_await active_brokers();
}

// The metadata store answers and this broker serves.
Task<Response> Brokers::health() {
  auto root = co_await (*broker().stores.cluster).exists("/");
  if (!root.ok()) co_return error(503, root.status().message());
  if (!broker().namespaces.serving()) {
    co_return error(503, "this broker lost its metadata session");
  }
  co_return Response{200, "text/plain; charset=utf-8", "ok", {}};
}

Task<Response> Brokers::leader() {
  if (load() == nullptr) {
    co_return ok_json(Json{{"serviceUrl", broker().namespaces.self().http_url}});
  }
  auto leader = co_await load()->leader();
  if (!leader.ok()) co_return broker_error(leader.status());
  if (!leader->has_value()) co_return error(404, "No leader broker");
  co_return Response::json(200, **leader);
}

Task<Response> Brokers::owned_namespaces(std::string cluster, std::string id, const Request& req) {
  if (cluster != broker().config.cluster_name) {
    co_return error(404, fmt::format("Cluster {} does not exist", cluster));
  }
  NamespaceService& namespaces = broker().namespaces;
  if (id != broker_id(namespaces.self().http_url)) {
    // Another registered broker's bundles: it answers for itself.
    bool registered = false;
    if (load() != nullptr) {
      auto ids = co_await load()->brokers();
      if (!ids.ok()) co_return broker_error(ids.status());
      registered = std::find(ids->begin(), ids->end(), id) != ids->end();
    }
    if (!registered) co_return error(404, fmt::format("Broker {} is not active", id));
    Response r;
    r.status = 307;
    r.headers["Location"] = fmt::format("http://{}{}", id, req.target);
    co_return r;
  }
  auto list = [&namespaces]() -> Task<std::vector<std::string>> {
    co_return namespaces.owned_bundles();
  };
  auto owned = co_await run_on<std::vector<std::string>>(namespaces.executor(), std::move(list));
  Json out = Json::object();
  for (const std::string& bundle : *owned) {
    out[bundle] = {{"broker_assignment", "shared"}, {"is_controlled", false}, {"is_active", true}};
  }
  co_return ok_json(out);
}

Task<Response> Brokers::overrides() {
  auto loaded = co_await admin::load(*broker().stores.cluster, std::string(kDynamicConfigPath));
  if (auto* r = std::get_if<Response>(&loaded)) co_return std::move(*r);
  const auto& node = std::get<0>(loaded);
  co_return ok_json(node ? node->value : Json::object());
}

Task<Response> Brokers::set_override(std::string key, std::string value) {
  if (!DynamicConfig::is_dynamic(key)) co_return error(412, "Can't update non-dynamic configuration");
  if (Status st = dynamic().check(key, value); !st.ok()) co_return error(412, st.message());
  metadata::MetadataStore& store = *broker().stores.cluster;
  const std::string path(kDynamicConfigPath);
  metadata::PutOptions create;  // the node, if there is none yet
  create.expected_version = -1;
  auto made = co_await store.put_recursive(path, "{}", create);
  if (!made.ok() && !made.status().is(Errc::kBadVersion)) co_return store_error(made.status());
  const Mutation set = [&key, &value](Json& overrides) -> std::optional<Response> {
    overrides[key] = value;
    return std::nullopt;
  };
  co_return co_await update_node(store, path, set, "No dynamic configuration");
}

Task<Response> Brokers::remove_override(std::string key) {
  if (!DynamicConfig::is_dynamic(key)) co_return error(412, "Can't delete non-dynamic configuration");
  const Mutation remove = [&key](Json& overrides) -> std::optional<Response> {
    overrides.erase(key);
    return std::nullopt;
  };
  Response r = co_await update_node(*broker().stores.cluster, std::string(kDynamicConfigPath),
                                    remove, "No dynamic configuration");
  if (r.status == 404) co_return no_content();  // no override of any key: nothing to drop
  co_return r;
}

// Every key of the broker's configuration with its value, as text.
Json runtime_configuration(const BrokerConfig& config) {
  BrokerConfig copy = config;
  ConfigSchema schema("broker");
  bind_broker_config(schema, &copy);
  Json out = Json::object();
  for (auto& [key, value] : schema.values()) out[key] = std::move(value);
  return out;
}

// Pulsar's InternalConfigurationData: where this cluster's metadata and ledgers are.
Json internal_configuration(const BrokerConfig& config) {
  const std::string& store = config.metadata.metadata_store_url;
  const std::string& configuration = config.metadata.configuration_metadata_store_url.empty()
                                         ? store
                                         : config.metadata.configuration_metadata_store_url;
  return {{"metadataStoreUrl", store},
          {"configurationMetadataStoreUrl", configuration},
          {"bookkeeperMetadataServiceUri", "metadata-store:" + store + "/ledgers"}};
}

Response text(std::string body) { return Response{200, "text/plain; charset=utf-8", std::move(body), {}}; }

}  // namespace

void add_brokers(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<Brokers>(std::move(ctx));
  const std::string brokers = "/admin/v2/brokers";
  const Permission super = Permission::super_user();
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", brokers, super,
             [self](const Request&, const PathParams&) { return self->active_brokers(); });
  router.add("GET", brokers + "/health", super,
             [self](const Request&, const PathParams&) { return self->health(); });
  router.add("GET", brokers + "/leaderBroker", super,
             [self](const Request&, const PathParams&) { return self->leader(); });
  auto config = [self]() -> const BrokerConfig& { return self->config(); };
  router.add("GET", brokers + "/configuration/runtime", super,
             [self](const Request&, const PathParams&) -> Task<Response> {
               co_return ok_json(runtime_configuration(*self->dynamic().current()));
             });
  router.add("GET", brokers + "/configuration", super,
             [](const Request&, const PathParams&) -> Task<Response> {
               Json keys = Json::array();
               for (std::string_view key : DynamicConfig::keys()) keys.push_back(key);
               co_return ok_json(keys);
             });
  router.add("GET", brokers + "/configuration/values", super,
             [self](const Request&, const PathParams&) { return self->overrides(); });
  router.add("POST", brokers + "/configuration/{key}/{value}", super,
             [self](const Request&, const PathParams& p) {
               return self->set_override(p.at("key"), p.at("value"));
             });
  router.add("DELETE", brokers + "/configuration/{key}", super,
             [self](const Request&, const PathParams& p) { return self->remove_override(p.at("key")); });
  router.add("GET", brokers + "/internal-configuration", super,
             [config](const Request&, const PathParams&) -> Task<Response> {
               co_return ok_json(internal_configuration(config()));
             });
  router.add("GET", brokers + "/ready", super,
             [](const Request&, const PathParams&) -> Task<Response> { co_return text("ok"); });
  router.add("GET", brokers + "/version", super,
             [](const Request&, const PathParams&) -> Task<Response> {
               co_return text(kVersion);
             });
  router.add("GET", brokers + "/{cluster}", super, [self](const Request&, const PathParams& p) {
    return self->cluster_brokers(p.at("cluster"));
  });
  router.add("GET", brokers + "/{cluster}/{broker}/ownedNamespaces", super,
             [self](const Request& req, const PathParams& p) {
               return self->owned_namespaces(p.at("cluster"), p.at("broker"), req);
             });
}

Prefix brokers_prefix() {
  // "/admin/v2/brokers/" itself is not the list (which is "/admin/v2/brokers").
  return templates_prefix("/admin/v2/brokers/", {"GET", "POST", "DELETE"});
}

}  // namespace magnetar::broker::admin
