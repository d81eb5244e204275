#pragma once
// How the resources join the admin API's one router: each resource file registers its routes,
// every one with its template and the http::Permission it needs (Pulsar's authorization:
// README.md), and the URL prefixes the router is served under say what each answers before
// the router (admin_support.h). admin_router.cc calls them all.
//
// The contexts are shared by the handlers of the router and outlive it; the handlers run on
// the web server's event loop.

#include <memory>

#include "broker/admin/admin_resources.h"
#include "broker/admin/admin_support.h"
#include "broker/service/broker_services.h"
#include "http/router.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker {
class LoadManager;
}

namespace magnetar::broker::admin {

// What the configuration-store resources (clusters, tenants, namespaces) work with.
struct AdminContext {
  metadata::MetadataStores stores;
  AdminResourcesOptions options;

  metadata::MetadataStore& configuration() const { return *stores.configuration; }
  metadata::MetadataStore& cluster_store() const { return *stores.cluster; }
};

// What the broker's own resources (lookup, topics, brokers, bundles) work with.
struct BrokerContext {
  BrokerServices services;
  LoadManager* load = nullptr;  // null: standalone, without a load manager
};

void add_clusters(http::Router& router, std::shared_ptr<const AdminContext> ctx);
void add_tenants(http::Router& router, std::shared_ptr<const AdminContext> ctx);
// With `broker` (may be null), {namespace}/topics lists its non-persistent topics too.
void add_namespaces(http::Router& router, std::shared_ptr<const AdminContext> ctx,
                    std::shared_ptr<const BrokerContext> broker);
void add_namespace_policies(http::Router& router, std::shared_ptr<const AdminContext> ctx);

void add_namespace_bundles(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_lookup(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_topics(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_non_persistent_topics(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_subscriptions(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_messages(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_partitioned_topics(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_topic_policies(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
// The namespace grants; with `broker` (may be null) the topic grants too.
void add_permissions(http::Router& router, std::shared_ptr<const AdminContext> ctx,
                     std::shared_ptr<const BrokerContext> broker);
void add_brokers(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_schemas(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_broker_stats(http::Router& router, std::shared_ptr<const BrokerContext> ctx);
void add_bookies(http::Router& router, std::shared_ptr<const BrokerContext> ctx);

// The prefixes, with the methods each serves and its answers before the router.
Prefix clusters_prefix();  // "/admin/v2/clusters/"
Prefix tenants_prefix();   // "/admin/v2/tenants/"
// With `broker`, the bundle operations are routed too.
Prefix namespaces_prefix(bool broker);  // "/admin/v2/namespaces/"
Prefix lookup_prefix();                 // "/lookup/v2/topic/"
Prefix persistent_prefix();             // "/admin/v2/persistent/"
Prefix non_persistent_prefix();         // "/admin/v2/non-persistent/"
Prefix brokers_prefix();                // "/admin/v2/brokers/"
Prefix schemas_prefix();                // "/admin/v2/schemas/"
Prefix broker_stats_prefix();           // "/admin/v2/broker-stats/"
Prefix bookies_prefix();                // "/admin/v2/bookies/"

}  // namespace magnetar::broker::admin
