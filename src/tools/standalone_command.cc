// `magnetar standalone [--conf FILE] [--set key=value ...] [--data-dir DIR] [--wipe-data]
// [-a HOST] [--bookkeeper-port N] [-nfw] [-nss]`: one process with the embedded RocksDB
// metadata store, one bookie and the broker, as `pulsar standalone`. The cluster
// `standalone`, tenant `public` and namespace `public/default` are created at the first
// start; the cluster's URLs follow the standalone's ports and address at every start.

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "broker/broker_server.h"
#include "common/config.h"
#include "common/logging.h"
#include "tools/commands.h"
#include "tools/server_setup.h"

namespace magnetar::tools {

int run_standalone(const StandaloneArgs& args) {
  broker::BrokerConfig config;
  // One bookie: every ledger on it (Pulsar's standalone.conf does the same).
  config.managed_ledger.ensemble_size = 1;
  config.managed_ledger.write_quorum = 1;
  config.managed_ledger.ack_quorum = 1;
  // One broker: a bundle it splits has nowhere to go, and unloading the halves would only
  // disconnect every client of their topics (at full rate, a 100 ms stall and every
  // unacknowledged publish sent again). Pulsar's standalone runs no load manager at all.
  config.load_balancer_auto_unload_split_bundles_enabled = false;
  // The metadata store and the bookie's directories default to places under --data-dir: empty
  // in the configuration (and its template) means there.
  config.metadata.metadata_store_url.clear();
  // Left empty, advertisedAddress is "localhost" (below), as `pulsar standalone` advertises
  // when neither advertisedAddress nor advertisedListeners is configured.
  config.advertised_address.clear();
  const auto root = std::filesystem::absolute(args.data_dir) / "standalone";
  bookie::BookieConfig bookie_config;
  bookie_config.bookie_port = 3181;
  bookie_config.journal_directories.clear();
  bookie_config.ledger_directories.clear();
  ConfigSchema schema("standalone");
  broker::bind_broker_config(schema, &config);
  schema.bind("bookiePort", &bookie_config.bookie_port, "Port of the embedded bookie")
      .range(0, 65535);
  bookie::bind_bookie_storage_config(schema, &bookie_config);
  if (args.server.print_template) {
    std::fputs(schema.render_template().c_str(), stdout);
    std::fputs("\n# Left empty, metadataStoreUrl, journalDirectories and ledgerDirectories are "
               "under --data-dir\n# (data/standalone/metadata, .../bookkeeper/journal, "
               ".../bookkeeper/ledgers);\n# advertisedAddress is localhost.\n",
               stdout);
    return 0;
  }
  block_shutdown_signals();
  log::Logger log("standalone");
  Status st = load_server_config(schema, args.server, "standalone.conf");
  if (st.ok() && !args.advertised_address.empty()) {
    st = schema.apply_flag("advertisedAddress", args.advertised_address);
  }
  if (st.ok() && args.bookkeeper_port >= 0) {
    st = schema.apply_flag("bookiePort", std::to_string(args.bookkeeper_port));
  }
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  if (config.metadata.metadata_store_url.empty()) {
    config.metadata.metadata_store_url = "rocksdb://" + (root / "metadata").string();
  }
  if (bookie_config.journal_directories.empty()) {
    bookie_config.journal_directories = {(root / "bookkeeper" / "journal").string()};
  }
  if (bookie_config.ledger_directories.empty()) {
    bookie_config.ledger_directories = {(root / "bookkeeper" / "ledgers").string()};
  }
  if (args.wipe_data) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
    if (ec) {
      std::fprintf(stderr, "error: cannot wipe %s: %s\n", root.c_str(), ec.message().c_str());
      return 1;
    }
    log.info("wiped the data in {}", root.string());
  }
  // The embedded bookie keeps its own default address unless one was configured: it is the
  // broker's alone, and "localhost" may resolve to ::1 first while it listens on IPv4.
  if (!config.advertised_address.empty()) {
    bookie_config.advertised_address = config.advertised_address;
  } else {
    config.advertised_address = "localhost";
  }
  bookie_config.metadata = config.metadata;
  log.info("starting standalone (data in {}) with configuration:\n{}", root.string(),
           schema.describe_effective());

  auto stores = open_cluster_stores(config, ClusterUrls::kFollowThisBroker);
  if (!stores.ok()) {
    log.error("{}", stores.status().message());
    return 1;
  }
  auto bookie = start_bookie(bookie_config, stores->cluster);
  if (!bookie.ok()) {
    log.error("{}", bookie.status().message());
    return 1;
  }
  // The broker reaches its embedded bookie by calls, not through a loopback socket
  // (protocol/local_bookie.h): no framing, no socket round trip, no hop through the bookie's
  // event loop on the write path; adds are stored on the caller's loop where nothing would
  // wait (docs/performance-per-message.md).
  config.local_bookies[bookie->server->bookie_id()] = bookie->server->in_process();
  // Pulsar's standalone also runs a load manager over its one broker: it registers, so
  // `brokers list` and the leader endpoints answer as in a cluster.
  auto server = broker::BrokerServer::start(config, *stores, config.load_balancer_enabled);
  if (!server.ok()) {
    log.error("{}", server.status().to_string());
    bookie->stop();
    return 1;
  }
  announce_running(log, "standalone", config, **server);

  const int signal = wait_for_shutdown_signal();
  log.info("signal {} received: stopping", signal);
  stop_broker_server(**server, log);
  server->reset();
  bookie->stop();
  (void)run_sync<Status>([&]() { return stores->cluster->close(); });
  log.info("standalone stopped");
  return 0;
}

}  // namespace magnetar::tools
