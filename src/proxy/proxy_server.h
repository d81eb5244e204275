#pragma once
// `magnetar proxy`: one address for a whole cluster (reference §6). The Pulsar protocol on
// servicePort (and servicePortTls), HTTP on webServicePort (and webServicePortTls); brokers
// found through the cluster's metadata store or named in proxy.conf. Nothing durable: any
// number of proxies can front the same brokers.
//
// Start: the configuration is checked (TLS files, authentication settings, the allow-list)
// before anything listens, and a bad one fails start() with a message naming the key or
// file; then the discovery reads the registered brokers, then the ports open. Stop: the ports
// close, every client connection closes (clients reconnect elsewhere), the task group drains.
//
// Threading: numIOThreads event loops; a client connection lives on one (round robin), with
// its broker connections. maxConcurrentInboundConnections bounds the open client connections
// (beyond it a new one is closed at once and counted as rejected).

#include <memory>
#include <string>

#include "common/status.h"
#include "metadata/metadata_store.h"
#include "proxy/proxy_config.h"

namespace magnetar::proxy {

class ProxyServer {
 public:
  // `store`: the cluster's metadata store for discovery (null with static discovery).
  static Result<std::unique_ptr<ProxyServer>> start(ProxyConfig config,
                                                    std::shared_ptr<metadata::MetadataStore> store);
  ~ProxyServer();
  // Idempotent; blocks until every connection has closed.
  void stop();

  int port() const;
  int tls_port() const;  // 0 without servicePortTls
  int web_port() const;
  int web_tls_port() const;  // 0 without webServicePortTls
  // Client connections open now.
  int64_t connections() const;

  class Impl;

 private:
  explicit ProxyServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace magnetar::proxy
