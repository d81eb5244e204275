// Authentication and authorization go in one place: make_router() below sets the router's
// guard (access_guard.h: the caller against each route's http::Permission) once the resources
// added their routes and before serve_router() mounts it.
//
// Builds the admin API's one http::Router from every resource's routes and serves it under
// the URL prefixes the API had before the router (admin_support.h), with their methods and
// their answers to paths no route matches.

#include <memory>
#include <optional>
#include <utility>

#include "broker/admin/access_guard.h"
#include "broker/admin/admin_resources.h"
#include "broker/admin/admin_routes.h"
#include "broker/admin/admin_support.h"

namespace magnetar::broker {

namespace {

using admin::AdminContext;
using admin::BrokerContext;

// Every route: the configuration-store resources, and with `broker` its own resources.
std::shared_ptr<http::Router> make_router(metadata::MetadataStores stores,
                                          AdminResourcesOptions options,
                                          std::optional<BrokerContext> broker) {
  auto router = std::make_shared<http::Router>();
  auto resources = std::make_shared<const AdminContext>(AdminContext{stores, options});
  admin::add_clusters(*router, resources);
  admin::add_tenants(*router, resources);
  auto own = broker ? std::make_shared<const BrokerContext>(*broker) : nullptr;
  admin::add_namespaces(*router, resources, own);
  admin::add_namespace_policies(*router, resources);
  admin::add_permissions(*router, resources, own);
  if (own) {
    admin::add_namespace_bundles(*router, own);
    admin::add_lookup(*router, own);
    admin::add_topics(*router, own);
    admin::add_non_persistent_topics(*router, own);
    admin::add_subscriptions(*router, own);
    admin::add_messages(*router, own);
    admin::add_partitioned_topics(*router, own);
    admin::add_topic_policies(*router, own);
    admin::add_brokers(*router, own);
    admin::add_schemas(*router, own);
    admin::add_broker_stats(*router, own);
    admin::add_bookies(*router, own);
    const BrokerServices& services = broker->services;
    if (services.authentication != nullptr || services.authorization != nullptr) {
      router->set_guard(admin::make_access_guard(services.authentication, services.authorization));
    }
  }
  return router;
}

void serve_router(http::HttpServer& web, std::shared_ptr<const http::Router> router, bool broker) {
  admin::serve_exact(web, router, "GET", "/admin/v2/clusters");
  admin::serve_exact(web, router, "GET", "/admin/v2/tenants");
  admin::serve(web, router, admin::clusters_prefix());
  admin::serve(web, router, admin::tenants_prefix());
  admin::serve(web, router, admin::namespaces_prefix(broker));
  if (!broker) return;
  admin::serve_exact(web, router, "GET", "/admin/v2/brokers");
  admin::serve(web, router, admin::brokers_prefix());
  admin::serve(web, router, admin::lookup_prefix());
  admin::serve(web, router, admin::persistent_prefix());
  admin::serve(web, router, admin::non_persistent_prefix());
  admin::serve(web, router, admin::schemas_prefix());
  admin::serve(web, router, admin::broker_stats_prefix());
  admin::serve(web, router, admin::bookies_prefix());
}

}  // namespace

void add_admin_resource_routes(http::HttpServer& web, metadata::MetadataStores stores,
                               AdminResourcesOptions options) {
  serve_router(web, make_router(std::move(stores), std::move(options), std::nullopt), false);
}

void add_admin_routes(http::HttpServer& web, metadata::MetadataStores stores,
                      AdminResourcesOptions options, BrokerServices broker, LoadManager* load) {
  auto router = make_router(std::move(stores), std::move(options), BrokerContext{broker, load});
  serve_router(web, std::move(router), true);
}

}  // namespace magnetar::broker
