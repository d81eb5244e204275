// `magnetar standalone [--conf FILE] [--set key=value ...] [--data-dir DIR]`: one process
// with the embedded RocksDB metadata store, one bookie and the broker, as `pulsar
// standalone`. The cluster `standalone`, tenant `public` and namespace `public/default` are
// created at the first start.

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "broker/admin_resources.h"
#include "broker/broker.h"
#include "broker/topic.h"
#include "common/config.h"
#include "common/logging.h"
#include "http/http_server.h"
#include "protocol/topic_name.h"
#include "tools/commands.h"
#include "tools/server_setup.h"

namespace magnetar::tools {

namespace {

// Creates a node with `value` unless it exists.
Task<Status> ensure_node(metadata::MetadataStore& store, std::string path, std::string value) {
  auto exists = co_await store.exists(path);
  if (!exists.ok()) co_return exists.status();
  if (*exists) co_return Status::OK();
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await store.put_recursive(path, std::move(value), create);
  if (!made.ok() && !made.status().is(Errc::kBadVersion)) co_return made.status();
  co_return Status::OK();
}

Task<Status> bootstrap(metadata::MetadataStore& configuration, const broker::BrokerConfig& c) {
  const nlohmann::json cluster = {{"serviceUrl", c.web_service_url()},
                                  {"brokerServiceUrl", c.service_url()}};
  Status st =
      co_await ensure_node(configuration, "/admin/clusters/" + c.cluster_name, cluster.dump());
  if (!st.ok()) co_return st;
  const nlohmann::json tenant = {{"adminRoles", nlohmann::json::array()},
                                 {"allowedClusters", {c.cluster_name}}};
  st = co_await ensure_node(configuration, "/admin/policies/public", tenant.dump());
  if (!st.ok()) co_return st;
  const nlohmann::json policies = {{"replication_clusters", {c.cluster_name}},
                                   {"bundles", {{"numBundles", 4}}}};
  st = co_await ensure_node(configuration, "/admin/policies/public/default", policies.dump());
  co_return st;
}

// GET /admin/v2/persistent/{tenant}/{namespace}/{topic}/stats (and /internalStats).
void add_stats_routes(http::HttpServer& web, broker::Broker& b) {
  web.route_prefix(
      "GET", "/admin/v2/persistent/", [&b](const http::Request& req) -> Task<http::Response> {
        std::string rest = req.path.substr(std::string("/admin/v2/persistent/").size());
        const bool internal = rest.ends_with("/internalStats");
        const std::string suffix = internal ? "/internalStats" : "/stats";
        if (!rest.ends_with(suffix)) co_return http::Response::error(404, "Not found");
        rest.resize(rest.size() - suffix.size());
        auto decoded = http::url_decode(rest);
        auto name = protocol::TopicName::parse("persistent://" + (decoded ? *decoded : rest));
        if (!name.ok()) co_return http::Response::error(412, name.status().message());
        const std::string key = name->to_string();
        auto on_loop = [&b, key, internal]() -> Task<std::string> {
          auto topic = b.loaded_topic(key);
          if (!topic) co_return std::string();
          co_return internal ? topic->ledger().internal_stats().dump() : topic->stats().dump();
        };
        auto task = asio::co_spawn(b.topic_executor(key), on_loop, asio::use_awaitable);
        std::string body = co_await std::move(task);
        if (body.empty()) co_return http::Response::error(404, "Topic not found");
        co_return http::Response::json(200, std::move(body));
      });
}

}  // namespace

int run_standalone(const StandaloneArgs& args) {
  broker::BrokerConfig config;
  // One bookie: every ledger on it (Pulsar's standalone.conf does the same).
  config.managed_ledger.ensemble_size = 1;
  config.managed_ledger.write_quorum = 1;
  config.managed_ledger.ack_quorum = 1;
  config.metadata.metadata_store_url =
      "rocksdb://" +
      (std::filesystem::absolute(args.data_dir) / "standalone" / "metadata").string();
  const auto root = std::filesystem::absolute(args.data_dir) / "standalone";
  bookie::BookieConfig bookie_config;
  bookie_config.bookie_port = 3181;
  bookie_config.journal_directories = {(root / "bookkeeper" / "journal").string()};
  bookie_config.ledger_directories = {(root / "bookkeeper" / "ledgers").string()};
  ConfigSchema schema("standalone");
  broker::bind_broker_config(schema, &config);
  schema.bind("bookiePort", &bookie_config.bookie_port, "Port of the embedded bookie")
      .range(0, 65535);
  bookie::bind_bookie_storage_config(schema, &bookie_config);
  if (args.server.print_template) {
    std::fputs(schema.render_template().c_str(), stdout);
    return 0;
  }
  block_shutdown_signals();
  log::Logger log("standalone");
  Status st = load_server_config(schema, args.server);
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  bookie_config.advertised_address = config.advertised_address;
  bookie_config.metadata = config.metadata;
  log.info("starting standalone (data in {}) with configuration:\n{}", root.string(),
           schema.describe_effective());

  auto stores = run_sync<Result<metadata::MetadataStores>>(
      [&]() { return metadata::open_stores(config.metadata); });
  if (!stores.ok()) {
    log.error("cannot open the metadata store: {}", stores.status().to_string());
    return 1;
  }
  st = run_sync<Status>([&]() { return bootstrap(*stores->configuration, config); });
  if (!st.ok()) {
    log.error("cannot create the standalone cluster, tenant and namespace: {}", st.to_string());
    return 1;
  }
  auto bookie = start_bookie(bookie_config, stores->cluster);
  if (!bookie.ok()) {
    log.error("{}", bookie.status().message());
    return 1;
  }
  auto broker = broker::Broker::start(config, *stores);
  if (!broker.ok()) {
    log.error("{}", broker.status().to_string());
    return 1;
  }
  http::ServerOptions web_options;
  web_options.address = config.bind_address;
  web_options.port = config.web_service_port;
  auto web = http::HttpServer::start(web_options, log);
  if (!web.ok()) {
    log.error("{}", web.status().to_string());
    return 1;
  }
  http::add_metrics_route(**web);
  add_stats_routes(**web, **broker);
  broker::AdminResourcesOptions admin_options;
  admin_options.cluster_name = config.cluster_name;
  broker::add_admin_resource_routes(**web, *stores, admin_options);
  log.info("standalone ready: service URL pulsar://{}:{}, web service URL http://{}:{}",
           config.advertised_address, (*broker)->port(), config.advertised_address, (*web)->port());
  std::printf(
      "Magnetar standalone is running.\n  service URL:     pulsar://%s:%d\n"
      "  web service URL: http://%s:%d\n",
      config.advertised_address.c_str(), (*broker)->port(), config.advertised_address.c_str(),
      (*web)->port());
  std::fflush(stdout);

  const int signal = wait_for_shutdown_signal();
  log.info("signal {} received: stopping", signal);
  (*web)->stop();
  (*broker)->stop();
  broker->reset();
  bookie->stop();
  (void)run_sync<Status>([&]() { return stores->cluster->close(); });
  log.info("standalone stopped");
  return 0;
}

}  // namespace magnetar::tools
