// `magnetar bookie [--conf FILE] [--set key=value ...]`

#include <csignal>
#include <cstdio>

#include "autorecovery/autorecovery.h"
#include "common/config.h"
#include "common/logging.h"
#include "http/http_server.h"
#include "tools/commands.h"
#include "tools/server_setup.h"

namespace magnetar::tools {

int run_bookie(const ServerArgs& args) {
  bookie::BookieConfig config;
  ConfigSchema schema("bookie");
  bookie::bind_bookie_config(schema, &config);
  autorecovery::AutoRecoveryConfig recovery;
  autorecovery::bind_autorecovery_config(schema, &recovery);
  if (args.print_template) {
    std::fputs(schema.render_template().c_str(), stdout);
    return 0;
  }
  block_shutdown_signals();
  log::Logger log("bookie");
  Status st = load_server_config(schema, args, "bookkeeper.conf");
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  log.info("starting bookie {} with configuration:\n{}", config.bookie_id(),
           schema.describe_effective());

  auto stores = run_sync<Result<metadata::MetadataStores>>(
      [&]() { return metadata::open_stores(config.metadata); });
  if (!stores.ok()) {
    log.error("cannot open the metadata store: {}", stores.status().to_string());
    return 1;
  }
  auto running = start_bookie(config, stores->cluster);
  if (!running.ok()) {
    log.error("{}", running.status().message());
    return 1;
  }
  // autoRecoveryDaemonEnabled: the auditor candidate and a replication worker in this process.
  std::unique_ptr<autorecovery::AutoRecoveryService> auto_recovery;
  if (recovery.daemon_enabled) {
    auto started =
        autorecovery::AutoRecoveryService::start(recovery, stores->cluster, config.bookie_id());
    if (!started.ok()) {
      log.error("{}", started.status().message());
      running->stop();
      return 1;
    }
    auto_recovery = std::move(started).value();
  }
  std::unique_ptr<http::HttpServer> web;
  if (config.http_server_enabled) {
    http::ServerOptions web_options;
    web_options.address = config.advertised_address;
    web_options.port = config.http_server_port;
    auto started = http::HttpServer::start(web_options, log);
    if (!started.ok()) {
      log.error("{}", started.status().to_string());
      return 1;
    }
    web = std::move(started).value();
    http::add_metrics_route(*web);
    log.info("metrics at http://{}:{}/metrics", config.advertised_address, web->port());
  }
  int signal = wait_for_shutdown_signal();
  if (web) web->stop();
  log.info("signal {} received: stopping", signal);
  if (auto_recovery) auto_recovery->stop();
  running->stop();
  (void)run_sync<Status>([&]() { return stores->cluster->close(); });
  log.info("bookie stopped");
  return 0;
}

}  // namespace magnetar::tools
