#include "tools/server_setup.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "bookie/cookie.h"
#include "broker/broker.h"
#include "common/logging.h"
#include "net/resolve.h"

namespace magnetar::tools {


Status load_server_config(ConfigSchema& schema, const ServerArgs& args,
                          std::string_view default_file) {
  const std::string conf = !args.conf.empty() || default_file.empty()
                               ? args.conf
                               : home_conf_file(default_file);
  if (!conf.empty()) {
    MAGNETAR_TRY(schema.load_file(conf));
    if (args.conf.empty()) log::Logger("config").info("configuration read from {}", conf);
  }
  MAGNETAR_TRY(schema.apply_environment());
  for (const std::string& s : args.sets) MAGNETAR_TRY(schema.apply_assignment(s, "--set"));
  if (const std::string ignored = schema.ignored_warning(); !ignored.empty()) {
    log::Logger("config").warn("{}", ignored);
  }
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

void stop_broker_server(broker::BrokerServer& server, const log::Logger& log) {
  const int64_t timeout_ms =
      server.broker().dynamic_config().current()->broker_shutdown_timeout_ms;
  if (timeout_ms > 0) {
    std::thread([timeout_ms, log] {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
      log.error("not stopped after brokerShutdownTimeoutMs={}: exiting", timeout_ms);
      std::_Exit(1);
    }).detach();
  }
  server.stop();
}

void RunningBookie::stop() {
  if (server) server->stop();
  server.reset();
  bookie.reset();
}

Result<RunningBookie> start_bookie(const bookie::BookieConfig& given,
                                   std::shared_ptr<metadata::MetadataStore> cluster_store) {
  // A bookie's id is address:port with an IP address (as BookKeeper's with
  // useHostNameAsBookieID=false): an advertised host name is resolved, once, here.
  bookie::BookieConfig config = given;
  auto ip = net::resolve_listen_address(config.advertised_address);
  if (!ip.ok()) return Status(ip.status().code(), "advertisedAddress " + ip.status().message());
  if (*ip != config.advertised_address) {
    log::Logger("bookie").info("advertisedAddress {} resolves to {}: the bookie's id is {}:{}",
                               config.advertised_address, *ip, *ip, config.bookie_port);
    config.advertised_address = *ip;
  }
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

// The cluster's URLs in its node (other fields, such as peerClusterNames, kept) when they are
// not this broker's: a standalone is its cluster's only broker.
static Task<Status> follow_cluster_urls(metadata::MetadataStore& store, std::string path,
                                        nlohmann::json urls) {
  auto node = co_await store.get(path);
  if (!node.ok()) co_return node.status();
  if (!node->has_value()) co_return Status::OK();  // just created, or removed meanwhile
  auto cluster = nlohmann::json::parse((*node)->value, nullptr, false);
  if (!cluster.is_object()) cluster = nlohmann::json::object();
  bool changed = false;
  for (const char* key : {"serviceUrl", "brokerServiceUrl", "serviceUrlTls", "brokerServiceUrlTls"}) {
    const std::string want = urls.value(key, "");
    if (cluster.value(key, "") == want) continue;
    if (want.empty()) {
      cluster.erase(key);
    } else {
      cluster[key] = want;
    }
    changed = true;
  }
  if (!changed) co_return Status::OK();
  metadata::PutOptions same;
  same.expected_version = (*node)->stat.version;
  auto put = co_await store.put(path, cluster.dump(), same);
  co_return put.ok() ? Status::OK() : put.status();
}

Task<Status> bootstrap_cluster(metadata::MetadataStore& configuration,
                               const broker::BrokerConfig& c, ClusterUrls urls) {
  nlohmann::json cluster = {{"serviceUrl", c.web_service_url()},
                            {"brokerServiceUrl", c.service_url()}};
  if (c.web_service_port_tls) cluster["serviceUrlTls"] = c.web_service_url_tls();
  if (c.broker_service_port_tls) cluster["brokerServiceUrlTls"] = c.service_url_tls();
  const std::string path = "/admin/clusters/" + c.cluster_name;
  Status st = co_await ensure_node(configuration, path, cluster.dump());
  if (!st.ok()) co_return st;
  if (urls == ClusterUrls::kFollowThisBroker) {
    st = co_await follow_cluster_urls(configuration, path, cluster);
    if (!st.ok()) co_return st;
  }
  const nlohmann::json tenant = {{"adminRoles", nlohmann::json::array()},
                                 {"allowedClusters", {c.cluster_name}}};
  st = co_await ensure_node(configuration, "/admin/policies/public", tenant.dump());
  if (!st.ok()) co_return st;
  const nlohmann::json policies = {{"replication_clusters", {c.cluster_name}},
                                   {"bundles", {{"numBundles", c.default_number_of_namespace_bundles}}}};
  st = co_await ensure_node(configuration, "/admin/policies/public/default", policies.dump());
  co_return st;
}

Result<metadata::MetadataStores> open_cluster_stores(const broker::BrokerConfig& c,
                                                     ClusterUrls urls) {
  auto stores = run_sync<Result<metadata::MetadataStores>>(
      [&]() { return metadata::open_stores(c.metadata); });
  if (!stores.ok()) {
    return Status(stores.status().code(),
                  "cannot open the metadata store: " + stores.status().to_string());
  }
  Status st =
      run_sync<Status>([&]() { return bootstrap_cluster(*stores->configuration, c, urls); });
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
