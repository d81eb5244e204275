#include "tools/server_setup.h"

#include <csignal>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "bookie/cookie.h"
#include "common/logging.h"

namespace magnetar::tools {

Status load_server_config(ConfigSchema& schema, const ServerArgs& args) {
  if (!args.conf.empty()) MAGNETAR_TRY(schema.load_file(args.conf));
  MAGNETAR_TRY(schema.apply_environment());
  for (const std::string& s : args.sets) MAGNETAR_TRY(schema.apply_assignment(s, "--set"));
  return Status::OK();
}

namespace {
sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void block_shutdown_signals() {
  sigset_t set = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_shutdown_signal() {
  sigset_t set = shutdown_signals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

void RunningBookie::stop() {
  if (server) server->stop();
  server.reset();
  bookie.reset();
}

Result<RunningBookie> start_bookie(const bookie::BookieConfig& config,
                                   std::shared_ptr<metadata::MetadataStore> cluster_store) {
  MAGNETAR_TRY(bookie::check_and_stamp_cookie(config, *cluster_store));
  RunningBookie running;
  auto opened = bookie::Bookie::open(config);
  if (!opened.ok()) {
    return Status(opened.status().code(),
                  "cannot open bookie storage: " + opened.status().message());
  }
  running.bookie = std::move(opened).value();
  auto server = bookie::BookieServer::start(config, *running.bookie, std::move(cluster_store));
  if (!server.ok()) return server.status();
  running.server = std::move(server).value();
  return running;
}

// Creates a node with `value` unless it exists.
static Task<Status> ensure_node(metadata::MetadataStore& store, std::string path, std::string value) {
  auto exists = co_await store.exists(path);
  if (!exists.ok()) co_return exists.status();
  if (*exists) co_return Status::OK();
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await store.put_recursive(path, std::move(value), create);
  if (!made.ok() && !made.status().is(Errc::kBadVersion)) co_return made.status();
  co_return Status::OK();
}

Task<Status> bootstrap_cluster(metadata::MetadataStore& configuration,
                               const broker::BrokerConfig& c) {
  nlohmann::json cluster = {{"serviceUrl", c.web_service_url()},
                            {"brokerServiceUrl", c.service_url()}};
  if (c.web_service_port_tls) cluster["serviceUrlTls"] = c.web_service_url_tls();
  if (c.broker_service_port_tls) cluster["brokerServiceUrlTls"] = c.service_url_tls();
  Status st =
      co_await ensure_node(configuration, "/admin/clusters/" + c.cluster_name, cluster.dump());
  if (!st.ok()) co_return st;
  const nlohmann::json tenant = {{"adminRoles", nlohmann::json::array()},
                                 {"allowedClusters", {c.cluster_name}}};
  st = co_await ensure_node(configuration, "/admin/policies/public", tenant.dump());
  if (!st.ok()) co_return st;
  const nlohmann::json policies = {{"replication_clusters", {c.cluster_name}},
                                   {"bundles", {{"numBundles", c.default_number_of_namespace_bundles}}}};
  st = co_await ensure_node(configuration, "/admin/policies/public/default", policies.dump());
  co_return st;
}

Result<metadata::MetadataStores> open_cluster_stores(const broker::BrokerConfig& c) {
  auto stores = run_sync<Result<metadata::MetadataStores>>(
      [&]() { return metadata::open_stores(c.metadata); });
  if (!stores.ok()) {
    return Status(stores.status().code(),
                  "cannot open the metadata store: " + stores.status().to_string());
  }
  Status st = run_sync<Status>([&]() { return bootstrap_cluster(*stores->configuration, c); });
  if (!st.ok()) {
    return Status(st.code(), "cannot create the cluster, tenant public and namespace "
                             "public/default: " + st.to_string());
  }
  return stores;
}

void announce_running(const log::Logger& log, const char* what, const broker::BrokerConfig& config,
                      const broker::BrokerServer& server) {
  const std::string& host = config.advertised_address;
  const int port = server.port(), web_port = server.web_port();
  log.info("{} ready: service URL pulsar://{}:{}, web service URL http://{}:{}", what, host, port,
           host, web_port);
  std::printf("Magnetar %s is running.\n  service URL:     pulsar://%s:%d\n"
              "  web service URL: http://%s:%d\n",
              what, host.c_str(), port, host.c_str(), web_port);
  if (const int tls = server.tls_port(); tls != 0) {
    log.info("TLS service URL pulsar+ssl://{}:{}", host, tls);
    std::printf("  TLS service URL: pulsar+ssl://%s:%d\n", host.c_str(), tls);
  }
  if (const int tls = server.web_tls_port(); tls != 0) {
    log.info("TLS web service URL https://{}:{}", host, tls);
    std::printf("  TLS web URL:     https://%s:%d\n", host.c_str(), tls);
  }
  std::fflush(stdout);
}

}  // namespace magnetar::tools
