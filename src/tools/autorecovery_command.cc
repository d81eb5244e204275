// `magnetar autorecovery [--conf FILE] [--set key=value ...]`: BookKeeper's AutoRecoveryMain
// as a process of its own (bookkeeper.conf: metadataStoreUrl, advertisedAddress and
// bookiePort name this instance, the auto-recovery keys of src/autorecovery/autorecovery.h).
// autoRecoveryDaemonEnabled is not consulted: running this role is the choice.

#include <cstdio>

#include "autorecovery/autorecovery.h"
#include "common/config.h"
#include "common/logging.h"
#include "http/http_server.h"
#include "tools/commands.h"
#include "tools/server_setup.h"

namespace magnetar::tools {

int run_autorecovery(const ServerArgs& args) {
  bookie::BookieConfig config;
  autorecovery::AutoRecoveryConfig recovery;
  ConfigSchema schema("autorecovery");
  bookie::bind_bookie_config(schema, &config);
  autorecovery::bind_autorecovery_config(schema, &recovery);
  if (args.print_template) {
    std::fputs(schema.render_template().c_str(), stdout);
    return 0;
  }
  block_shutdown_signals();
  log::Logger log("autorecovery");
  Status st = load_server_config(schema, args, "bookkeeper.conf");
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  auto stores = run_sync<Result<metadata::MetadataStores>>(
      [&]() { return metadata::open_stores(config.metadata); });
  if (!stores.ok()) {
    log.error("cannot open the metadata store: {}", stores.status().to_string());
    return 1;
  }
  auto service =
      autorecovery::AutoRecoveryService::start(recovery, stores->cluster, config.bookie_id());
  if (!service.ok()) {
    log.error("{}", service.status().message());
    return 1;
  }
  std::unique_ptr<http::HttpServer> web;
  if (config.http_server_enabled) {
    http::ServerOptions web_options;
    web_options.address = config.advertised_address;
    web_options.port = config.http_server_port;
    auto started = http::HttpServer::start(web_options, log);
    if (!started.ok()) {
      log.error("{}", started.status().to_string());
      (*service)->stop();
      return 1;
    }
    web = std::move(started).value();
    http::add_metrics_route(*web);
    log.info("metrics at http://{}:{}/metrics", config.advertised_address, web->port());
  }
  std::printf("autorecovery running as %s\n", config.bookie_id().c_str());
  std::fflush(stdout);
  int signal = wait_for_shutdown_signal();
  log.info("signal {} received: stopping", signal);
  if (web) web->stop();
  (*service)->stop();
  (void)run_sync<Status>([&]() { return stores->cluster->close(); });
  log.info("autorecovery stopped");
  return 0;
}

}  // namespace magnetar::tools
