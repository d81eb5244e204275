#pragma once
// What every server role does before it starts: layered configuration and signals.

#include <memory>
#include <string>
#include <string_view>

#include "bookie/bookie.h"
#include "bookie/server/bookie_server.h"
#include "broker/config/broker_config.h"
#include "broker/broker_server.h"
#include "common/config.h"
#include "common/logging.h"
#include "metadata/metadata_store.h"
#include "tools/commands.h"

namespace magnetar::tools {

// --conf file (else home_conf_file(default_file) when there is one), then MAGNETAR_*
// environment, then --set overrides; Pulsar keys not acted on are listed in one warning.
Status load_server_config(ConfigSchema& schema, const ServerArgs& args,
                          std::string_view default_file = "");

// Blocks SIGINT and SIGTERM in the calling thread; threads started afterwards inherit the
// mask, so the signals stay pending for wait_for_shutdown_signal(). Call before starting any
// thread.
void block_shutdown_signals();
// Returns the first SIGINT/SIGTERM received (after block_shutdown_signals()).
int wait_for_shutdown_signal();
// The broker's stop after a signal: a stop that takes longer than the broker's
// brokerShutdownTimeoutMs in force (its dynamic configuration's; 0: no limit) ends the
// process with exit code 1. Then stops the server.
void stop_broker_server(broker::BrokerServer& server, const log::Logger& log);

// A bookie serving: its storage and its TCP server (stop the server before the bookie).
struct RunningBookie {
  std::unique_ptr<bookie::Bookie> bookie;
  std::unique_ptr<bookie::BookieServer> server;
  void stop();
};

// Checks (or stamps) the cookie, opens the storage and starts serving and registering in
// `cluster_store`. Errors say which step failed.
Result<RunningBookie> start_bookie(const bookie::BookieConfig& config,
                                   std::shared_ptr<metadata::MetadataStore> cluster_store);

// Whether a starting broker rewrites its cluster's URLs (serviceUrl, brokerServiceUrl and
// their TLS forms) when they differ from its own: a standalone does (its ports or address may
// have changed since it created the cluster); a broker of a cluster does not.
enum class ClusterUrls { kKeep, kFollowThisBroker };

// Opens the metadata stores of `c` and bootstraps the cluster (bootstrap_cluster); errors
// say which step failed.
Result<metadata::MetadataStores> open_cluster_stores(const broker::BrokerConfig& c,
                                                     ClusterUrls urls = ClusterUrls::kKeep);

// Logs and prints (for scripts waiting on stdout) that `what` ("broker", "standalone") is
// running, with its service URLs, TLS ones included when those ports are open.
void announce_running(const log::Logger& log, const char* what, const broker::BrokerConfig& config,
                      const broker::BrokerServer& server);

// Creates what a new cluster needs in the configuration store, unless it exists: the
// cluster (its URLs from `c`), the tenant `public` and the namespace `public/default` (as
// Pulsar's initialize-cluster-metadata and standalone do).
Task<Status> bootstrap_cluster(metadata::MetadataStore& configuration,
                               const broker::BrokerConfig& c,
                               ClusterUrls urls = ClusterUrls::kKeep);

}  // namespace magnetar::tools
