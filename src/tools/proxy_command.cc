// `magnetar proxy [--conf FILE] [--metadata-store URL] [--configuration-metadata-store URL]
// [--set key=value ...]`: a Pulsar proxy in front of a cluster's brokers, with Pulsar's
// proxy.conf keys (src/proxy/README.md). Brokers are found in the metadata store named by
// metadataStoreUrl, or named statically by brokerServiceURL / brokerWebServiceURL.

#include <cstdio>

#include "common/config.h"
#include "common/logging.h"
#include "proxy/proxy_server.h"
#include "tools/commands.h"
#include "tools/server_setup.h"

namespace magnetar::tools {

int run_proxy(const ProxyArgs& args) {
  proxy::ProxyConfig config;
  ConfigSchema schema("proxy");
  proxy::bind_proxy_config(schema, &config);
  if (args.server.print_template) {
    std::fputs(schema.render_template().c_str(), stdout);
    return 0;
  }
  block_shutdown_signals();
  log::Logger log("proxy");
  ServerArgs server = args.server;
  // pulsar proxy's own flags, applied over the file like --set.
  if (!args.metadata_store.empty()) server.sets.push_back("metadataStoreUrl=" + args.metadata_store);
  if (!args.configuration_metadata_store.empty()) {
    server.sets.push_back("configurationMetadataStoreUrl=" + args.configuration_metadata_store);
  }
  Status st = load_server_config(schema, server, "proxy.conf");
  if (st.ok()) st = config.validate();
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  log.info("starting proxy with configuration:\n{}", schema.describe_effective());
  std::shared_ptr<metadata::MetadataStore> store;
  if (!config.static_discovery()) {
    auto opened = run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>([&]() {
      return metadata::open_store(config.metadata.metadata_store_url,
                                  config.metadata.store_options());
    });
    if (!opened.ok()) {
      log.error("cannot open the metadata store {}: {}", config.metadata.metadata_store_url,
                opened.status().to_string());
      return 1;
    }
    store = std::move(*opened);
  }
  auto server_running = proxy::ProxyServer::start(config, store);
  if (!server_running.ok()) {
    log.error("{}", server_running.status().to_string());
    if (store) (void)run_sync<Status>([&]() { return store->close(); });
    return 1;
  }
  auto& running = **server_running;
  const std::string host = config.advertised_address.empty() ? config.bind_address
                                                             : config.advertised_address;
  std::printf("Magnetar proxy is running.\n  service URL:     pulsar://%s:%d\n"
              "  web service URL: http://%s:%d\n",
              host.c_str(), running.port(), host.c_str(), running.web_port());
  if (running.tls_port() != 0) {
    std::printf("  service URL TLS: pulsar+ssl://%s:%d\n", host.c_str(), running.tls_port());
  }
  if (running.web_tls_port() != 0) {
    std::printf("  web service URL TLS: https://%s:%d\n", host.c_str(), running.web_tls_port());
  }
  std::fflush(stdout);
  const int signal = wait_for_shutdown_signal();
  log.info("signal {} received: stopping", signal);
  running.stop();
  server_running->reset();
  if (store) (void)run_sync<Status>([&]() { return store->close(); });
  log.info("proxy stopped");
  return 0;
}

}  // namespace magnetar::tools
