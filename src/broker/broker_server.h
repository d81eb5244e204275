#pragma once
// A whole broker process's serving side: the Pulsar protocol (Broker), the web port (admin
// REST API, lookup, /metrics), bundle ownership and, in cluster mode, registration, load
// reports and placement (LoadManager). `magnetar broker` and `magnetar standalone` both run
// one.
//
// Start order: the web port is bound first (its URL goes into the broker's ownership and
// registration records), then the broker, then the routes, then registration. Stop order is
// the reverse, releasing every bundle first so other brokers can take them at once.
//
// With webServicePortTls the web routes are served over HTTPS too; TLS files are checked
// before anything listens, and a bad one fails start() with a message naming it.

#include <memory>

#include "broker/config/broker_config.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::http {
class HttpServer;
}

namespace magnetar::broker {

class Broker;
class LoadManager;

class BrokerServer {
 public:
  // `load_manager`: register and place bundles by load (cluster mode); otherwise every
  // bundle is taken by this broker (standalone).
  static Result<std::unique_ptr<BrokerServer>> start(BrokerConfig config,
                                                     metadata::MetadataStores stores,
                                                     bool load_manager);
  ~BrokerServer();
  // Graceful: bundles released, registration removed, ports closed. Idempotent.
  void stop();

  Broker& broker() { return *broker_; }
  int port() const;
  int web_port() const;
  // The TLS ports, or 0 without brokerServicePortTls / webServicePortTls.
  int tls_port() const;
  int web_tls_port() const;
  LoadManager* load_manager() { return load_.get(); }

 private:
  BrokerServer() = default;
  metadata::MetadataStores stores_;
  std::unique_ptr<http::HttpServer> web_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<LoadManager> load_;
  bool stopped_ = false;
};

}  // namespace magnetar::broker
