#pragma once
// magnetar-client: produce, consume and read messages from the command line with
// pulsar-client's commands, flags and output. A library function so tests run it in-process.
//
//   magnetar-client [--url URL] [--conf FILE] produce <topic> -m hello -n 10
//   magnetar-client consume <topic> -s sub -n 10 -p Earliest
//   magnetar-client read <topic> -m earliest -n 10
//
// The service URL: pulsar://localhost:6650, brokerServiceUrl of the client.conf named by
// --conf or $PULSAR_CLIENT_CONF, then --url. TLS (pulsar+ssl:// and https:// URLs) from the
// same client.conf's keys (tlsTrustCertsFilePath, tlsAllowInsecureConnection,
// tlsEnableHostnameVerification, tlsCertificateFilePath, tlsKeyFilePath), as pulsar-client. Output
// goes to `out` ("----- got message -----" blocks and the final "N messages successfully
// produced|consumed|read"); errors to `err`.
//
// Exit codes: 0 success; 1 a usage error, a bad argument value, or a failure talking to the
// broker (the count of what succeeded is still printed). --help prints to `out`, 0.

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/client_conf.h"

namespace CLI {
class App;
}

namespace magnetar::client {
struct ClientOptions;
}

namespace magnetar::cli {

// `tls` onto the client library's tls_* options (magnetar-client and magnetar-perf).
void apply_tls_settings(const TlsSettings& tls, client::ClientOptions& options);

// Cluster failover (ours: pulsar-client and pulsar-perf have no such flags), for
// magnetar-client and magnetar-perf: --secondary-service-url (repeatable),
// --failover-delay-ms, --switch-back-delay-ms, --check-interval-ms, --service-url-provider,
// --discover-peer-clusters, --discovery-web-service-url.
struct FailoverFlags {
  std::vector<std::string> secondary_service_urls;
  int failover_delay_ms = 30'000;
  int switch_back_delay_ms = 60'000;
  int check_interval_ms = 30'000;
  std::string url_provider;
  bool discover_peer_clusters = false;
  std::string discovery_web_service_url;
};
void add_failover_options(CLI::App& app, FailoverFlags& flags);
void apply_failover_flags(const FailoverFlags& flags, client::ClientOptions& options);

// `args` excludes the program name. Blocks until the command is done (consume -n 0 until
// request_stop(), see interrupt.h).
int run_client(std::vector<std::string> args, std::ostream& out, std::ostream& err);

}  // namespace magnetar::cli
