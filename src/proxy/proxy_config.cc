#include "proxy/proxy_config.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "common/config.h"
#include "proxy/target_guard.h"

namespace magnetar::proxy {

namespace {

// Keys of Pulsar's shipped proxy.conf that this proxy does not act on: accepted, so that a
// Pulsar proxy.conf starts `magnetar proxy`, and listed in one warning.
constexpr std::array<std::string_view, 45> kPulsarProxyKeys = {
    "functionWorkerWebServiceURL",
    "functionWorkerWebServiceURLTLS",
    "metadataStoreCacheExpirySeconds",
    "haProxyProtocolEnabled",
    "numAcceptorThreads",
    "tlsProvider",
    "webServiceTlsProvider",
    "tlsEnabledWithKeyStore",
    "tlsKeyStoreType",
    "tlsKeyStore",
    "tlsKeyStorePassword",
    "tlsTrustStoreType",
    "tlsTrustStore",
    "tlsTrustStorePassword",
    "webServiceTlsProtocols",
    "webServiceTlsCiphers",
    "authorizationEnabled",
    "authorizationProvider",
    "superUserRoles",
    "tlsCertRefreshCheckDurationSec",
    "maxConcurrentInboundConnectionsPerIp",
    "tlsEnabledInProxy",
    "httpReverseProxyConfigs",
    "httpOutputBufferSize",
    "httpNumThreads",
    "httpRequestsLimitEnabled",
    "httpRequestsMaxPerSecond",
    "httpServerThreadPoolQueueSize",
    "httpServerAcceptQueueSize",
    "maxHttpServerConnections",
    "maxConcurrentHttpRequests",
    "httpMaxRequestHeaderSize",
    "basicAuthConf",
    "saslJaasClientAllowedIds",
    "saslJaasServerSectionName",
    "saslJaasServerRoleTokenSignerSecretPath",
    "webSocketServiceEnabled",
    "proxyExtensions",
    "proxyExtensionsDirectory",
    "zookeeperSessionTimeoutMs",
    "zooKeeperCacheExpirySeconds",
    "enableProxyStatsEndpoints",
    "metricsBufferResponse",
    "proxyAdditionalServlets",
    "additionalServlets",
};

}  // namespace

bool ProxyConfig::static_discovery() const {
  return tls_enabled_with_broker ? !broker_service_url_tls.empty() : !broker_service_url.empty();
}

Status ProxyConfig::validate() const {
  if (!static_discovery() && metadata.metadata_store_url.empty()) {
    return Status(Errc::kInvalidArgument,
                  tls_enabled_with_broker
                      ? "metadataStoreUrl or brokerServiceURLTLS: the proxy needs one to find "
                        "brokers (tlsEnabledWithBroker=true)"
                      : "metadataStoreUrl or brokerServiceURL: the proxy needs one to find "
                        "brokers");
  }
  if (static_discovery()) {
    const std::string& url = tls_enabled_with_broker ? broker_service_url_tls : broker_service_url;
    const std::string_view scheme = tls_enabled_with_broker ? "pulsar+ssl://" : "pulsar://";
    if (!url.starts_with(scheme)) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("{}: '{}' must start with {}",
                                tls_enabled_with_broker ? "brokerServiceURLTLS" : "brokerServiceURL",
                                url, scheme));
    }
  }
  if ((service_port_tls || web_service_port_tls) &&
      (tls.certificate_file_path.empty() || tls.key_file_path.empty())) {
    return Status(Errc::kInvalidArgument,
                  "servicePortTls/webServicePortTls need tlsCertificateFilePath and tlsKeyFilePath");
  }
  auto ports = parse_port_list(broker_proxy_allowed_target_ports);
  if (!ports.ok()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("brokerProxyAllowedTargetPorts: {}", ports.status().message()));
  }
  auto ips = parse_ip_patterns(broker_proxy_allowed_ip_addresses);
  if (!ips.ok()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("brokerProxyAllowedIPAddresses: {}", ips.status().message()));
  }
  return Status::OK();
}

void bind_proxy_config(ConfigSchema& s, ProxyConfig* c) {
  metadata::bind_metadata_config(s, &c->metadata);
  s.bind("brokerServiceURL", &c->broker_service_url,
         "Static discovery: pulsar://host:port[,host:port] of the brokers (instead of the "
         "metadata store)");
  s.bind("brokerServiceURLTLS", &c->broker_service_url_tls,
         "Static discovery over TLS: pulsar+ssl://host:port (with tlsEnabledWithBroker)");
  s.bind("brokerWebServiceURL", &c->broker_web_service_url,
         "Static discovery: http://host:port of the brokers' web service (admin, lookup)");
  s.bind("brokerWebServiceURLTLS", &c->broker_web_service_url_tls,
         "Static discovery over TLS: https://host:port of the brokers' web service");
  s.bind("checkActiveBrokers", &c->check_active_brokers,
         "Refuse data connections to a broker that is not registered in the metadata store");
  s.bind("clusterName", &c->cluster_name, "The cluster the proxy fronts (metrics label)");
  s.bind("bindAddress", &c->bind_address, "Address the proxy's listeners bind to");
  s.bind("advertisedAddress", &c->advertised_address,
         "Host name or IP the proxy is known by (logs; empty: the bind address)");
  s.bind("servicePort", &c->service_port, "Pulsar binary protocol port").range(0, 65535);
  s.bind("servicePortTls", &c->service_port_tls,
         "Pulsar binary protocol over TLS (pulsar+ssl://); empty: none")
      .range(0, 65535);
  s.bind("webServicePort", &c->web_service_port, "HTTP port (admin and lookup forwarded, /metrics)")
      .range(0, 65535);
  s.bind("webServicePortTls", &c->web_service_port_tls, "HTTPS port; empty: none")
      .range(0, 65535);
  s.bind("numIOThreads", &c->num_io_threads, "Event loops (0: one per core)").range(0, 256);
  s.bind("statusFilePath", &c->status_file_path,
         "When set, /status.html answers OK only while this file exists (rotation)");
  s.bind("proxyLogLevel", &c->proxy_log_level,
         "0: no per-command logs; 1: log the commands of lookup connections and handshakes; "
         "2: the same (payloads are never logged)")
      .range(0, 2);
  s.bind("proxyZeroCopyModeEnabled", &c->proxy_zero_copy_mode_enabled,
         "Relay spliced connections inside the kernel (splice(2)) when both sides are plain TCP");
  net::bind_tls_server_config(s, &c->tls, "proxy");
  auth::bind_authentication_config(s, &c->authentication);
  s.bind("forwardAuthorizationCredentials", &c->forward_authorization_credentials,
         "Send the client's own credentials to brokers (original_auth_data) besides its role");
  s.bind("authenticateMetricsEndpoint", &c->authenticate_metrics_endpoint,
         "/metrics needs credentials (when authenticationEnabled)");
  s.bind("brokerClientAuthenticationPlugin", &c->broker_client_authentication_plugin,
         "The proxy's own credentials towards brokers: Pulsar's plugin class name or token/tls");
  s.bind("brokerClientAuthenticationParameters", &c->broker_client_authentication_parameters,
         "Parameters of brokerClientAuthenticationPlugin");
  s.bind("brokerClientTrustCertsFilePath", &c->broker_client_trust_certs_file_path,
         "CAs the brokers' certificates must chain to (tlsEnabledWithBroker)");
  s.bind("brokerClientCertificateFilePath", &c->broker_client_certificate_file_path,
         "A client certificate the proxy presents to brokers (mutual TLS)");
  s.bind("brokerClientKeyFilePath", &c->broker_client_key_file_path,
         "The key of brokerClientCertificateFilePath");
  s.bind("tlsEnabledWithBroker", &c->tls_enabled_with_broker,
         "Connect to brokers over TLS (their pulsar+ssl:// and https:// URLs)");
  s.bind("tlsHostnameVerificationEnabled", &c->tls_hostname_verification_enabled,
         "Brokers' certificates must name the host connected to");
  s.bind("brokerClientTlsAllowInsecureConnection", &c->broker_client_tls_allow_insecure,
         "Accept brokers' certificates without verifying them (tests only)");
  s.bind("brokerProxyAllowedHostNames", &c->broker_proxy_allowed_host_names,
         "Host names data connections may target (comma list, * wildcards)");
  s.bind("brokerProxyAllowedIPAddresses", &c->broker_proxy_allowed_ip_addresses,
         "Addresses data connections may target (comma list of IPs or CIDR ranges, *)");
  s.bind("brokerProxyAllowedTargetPorts", &c->broker_proxy_allowed_target_ports,
         "Ports data connections may target (comma list of ports or ranges a-b, *)");
  s.bind("brokerProxyConnectTimeoutMs", &c->broker_proxy_connect_timeout_ms,
         "Connecting to a broker (TCP, TLS, CONNECT) must end within this")
      .range(100, 600000);
  s.bind("brokerProxyReadTimeoutMs", &c->broker_proxy_read_timeout_ms,
         "A broker silent this long on a data connection is taken for dead (0: never)")
      .range(0, 3600000);
  s.bind("maxConcurrentInboundConnections", &c->max_concurrent_inbound_connections,
         "Client connections beyond this are closed at once")
      .range(1, 10000000);
  s.bind("maxConcurrentLookupRequests", &c->max_concurrent_lookup_requests,
         "Lookups, partition metadata, topic lists and schemas in flight beyond this are refused")
      .range(1, 10000000);
  s.bind("maxMessageSize", &c->max_message_size,
         "Largest frame read from a client before its connection is spliced to a broker")
      .range(1024, 1024 * 1024 * 1024);
  s.bind("httpProxyTimeout", &c->http_proxy_timeout,
         "A forwarded HTTP request must be answered within this (ms)")
      .range(100, 86400000);
  s.bind("httpInputMaxReplayBufferSize", &c->http_input_max_replay_buffer_size,
         "Largest HTTP request body forwarded (it is replayed on redirects)")
      .range(0, 1024 * 1024 * 1024);
  s.bind("keepAliveIntervalSeconds", &c->keep_alive_interval_seconds,
         "PING interval of lookup connections; a client silent two intervals is dropped")
      .range(1, 3600);
  s.accept_foreign(kPulsarProxyKeys);
  s.accept_foreign_prefix("brokerClient_");
  metadata::add_zookeeper_aliases(s);
}

}  // namespace magnetar::proxy
