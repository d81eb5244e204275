#pragma once
// `magnetar proxy`'s configuration: Pulsar's proxy.conf keys with Pulsar's names and defaults
// (../shared/reference/pulsar-security-proxy.md §6.4). Every key of Pulsar's shipped
// proxy.conf is accepted; those the proxy does not act on are listed in one warning at start.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auth/authentication.h"
#include "metadata/metadata_store.h"
#include "net/tls.h"
#include "net/tls_config.h"

namespace magnetar {
class ConfigSchema;
}

namespace magnetar::proxy {

struct ProxyConfig {
  // A proxy has no metadata store of its own: none unless named.
  ProxyConfig() { metadata.metadata_store_url.clear(); }

  // --- Broker discovery ---
  // metadataStoreUrl / configurationMetadataStoreUrl (the brokers registered under
  // /loadbalance/brokers); empty when brokers are named statically below.
  metadata::MetadataConfig metadata;
  std::string broker_service_url;          // brokerServiceURL (pulsar://, may list hosts)
  std::string broker_service_url_tls;      // brokerServiceURLTLS (pulsar+ssl://)
  std::string broker_web_service_url;      // brokerWebServiceURL (http://)
  std::string broker_web_service_url_tls;  // brokerWebServiceURLTLS (https://)
  bool check_active_brokers = false;       // checkActiveBrokers

  // --- Server ---
  std::string cluster_name;  // clusterName (the `cluster` label of the metrics)
  std::string bind_address = "0.0.0.0";
  std::string advertised_address;
  int32_t service_port = 6650;                  // servicePort
  std::optional<int32_t> service_port_tls;      // servicePortTls
  int32_t web_service_port = 8080;              // webServicePort
  std::optional<int32_t> web_service_port_tls;  // webServicePortTls
  int32_t num_io_threads = 0;                   // numIOThreads (0: one per core)
  std::string status_file_path;                 // statusFilePath
  int32_t proxy_log_level = 0;                  // proxyLogLevel (1: log commands)
  bool proxy_zero_copy_mode_enabled = true;     // proxyZeroCopyModeEnabled (splice(2))

  // --- TLS towards clients (tlsCertificateFilePath, ...: net/tls_config.h) ---
  net::TlsServerConfig tls;

  // --- Authentication of clients ---
  // authenticationEnabled, authenticationProviders, anonymousUserRole, token*.
  auth::AuthenticationSettings authentication;
  bool forward_authorization_credentials = false;  // forwardAuthorizationCredentials
  bool authenticate_metrics_endpoint = true;       // authenticateMetricsEndpoint

  // --- The proxy towards brokers ---
  std::string broker_client_authentication_plugin;      // brokerClientAuthenticationPlugin
  std::string broker_client_authentication_parameters;  // brokerClientAuthenticationParameters
  std::string broker_client_trust_certs_file_path;      // brokerClientTrustCertsFilePath
  std::string broker_client_certificate_file_path;      // brokerClientCertificateFilePath
  std::string broker_client_key_file_path;              // brokerClientKeyFilePath
  bool tls_enabled_with_broker = false;                 // tlsEnabledWithBroker
  bool tls_hostname_verification_enabled = false;       // tlsHostnameVerificationEnabled
  bool broker_client_tls_allow_insecure = false;        // tlsAllowInsecureConnection toward brokers
  // The open-relay guard (CVE-2022-24280): where data connections may go.
  std::string broker_proxy_allowed_host_names = "*";    // brokerProxyAllowedHostNames
  std::string broker_proxy_allowed_ip_addresses = "*";  // brokerProxyAllowedIPAddresses
  std::string broker_proxy_allowed_target_ports = "6650,6651";  // brokerProxyAllowedTargetPorts
  int32_t broker_proxy_connect_timeout_ms = 10000;              // brokerProxyConnectTimeoutMs
  int32_t broker_proxy_read_timeout_ms = 75000;                 // brokerProxyReadTimeoutMs

  // --- Limits ---
  int32_t max_concurrent_inbound_connections = 10000;  // maxConcurrentInboundConnections
  int32_t max_concurrent_lookup_requests = 50000;      // maxConcurrentLookupRequests
  int32_t max_message_size = 5 * 1024 * 1024;          // maxMessageSize (frames read before splice)
  int64_t http_proxy_timeout = 300000;                 // httpProxyTimeout (ms)
  int32_t http_input_max_replay_buffer_size = 5 * 1024 * 1024;  // httpInputMaxReplayBufferSize
  int32_t keep_alive_interval_seconds = 30;  // keepAliveIntervalSeconds (lookup connections)

  // Static discovery: brokerServiceURL[TLS] set (the one of the broker side's scheme).
  bool static_discovery() const;
  // Checks what no single key can: a way to find brokers, TLS files for the TLS ports, ports
  // the allow-list parses. Errors (kInvalidArgument) name the key.
  Status validate() const;
};

// Declares every proxy.conf key bound to `config` (and Pulsar's other proxy.conf keys as
// accepted but not acted on).
void bind_proxy_config(ConfigSchema& schema, ProxyConfig* config);

}  // namespace magnetar::proxy
