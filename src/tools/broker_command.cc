// `magnetar broker [--conf FILE] [--set key=value ...]`: one broker of a cluster, with
// Pulsar's broker.conf keys: metadataStoreUrl (ZooKeeper: zk:host:2181,...), optionally
// configurationMetadataStoreUrl, clusterName, brokerServicePort, webServicePort,
// advertisedAddress, managedLedgerDefault{EnsembleSize,WriteQuorum,AckQuorum}, ...
// The cluster's metadata (the cluster, tenant `public`, namespace `public/default`) is
// created at the first start of any broker, as `pulsar initialize-cluster-metadata` would.

#include <cstdio>

#include "broker/broker_server.h"
#include "common/config.h"
#include "common/logging.h"
#include "tools/commands.h"
#include "tools/server_setup.h"

namespace magnetar::tools {

int run_broker(const ServerArgs& args) {
  broker::BrokerConfig config;
  ConfigSchema schema("broker");
  broker::bind_broker_config(schema, &config);
  if (args.print_template) {
    std::fputs(schema.render_template().c_str(), stdout);
    return 0;
  }
  block_shutdown_signals();
  log::Logger log("broker");
  Status st = load_server_config(schema, args, "broker.conf");
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  log.info("starting broker with configuration:\n{}", schema.describe_effective());
  auto stores = open_cluster_stores(config);
  if (!stores.ok()) {
    log.error("{}", stores.status().message());
    return 1;
  }
  auto server = broker::BrokerServer::start(config, *stores, config.load_balancer_enabled);
  if (!server.ok()) {
    log.error("{}", server.status().to_string());
    return 1;
  }
  announce_running(log, "broker", config, **server);
  const int signal = wait_for_shutdown_signal();
  log.info("signal {} received: stopping", signal);
  stop_broker_server(**server, log);
  server->reset();
  (void)run_sync<Status>([&]() { return stores->cluster->close(); });
  if (stores->configuration != stores->cluster) {
    (void)run_sync<Status>([&]() { return stores->configuration->close(); });
  }
  log.info("broker stopped");
  return 0;
}

}  // namespace magnetar::tools
