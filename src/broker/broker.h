#pragma once
// The broker: the Pulsar binary protocol on brokerServicePort (and over TLS on
// brokerServicePortTls when set) over the rooms below it — connections (wire/), topics and
// their registry (service/), bundle ownership and lookup (namespace/). This file is wiring
// only: event loops, listeners, the registry of open connections, start and stop.
//
// Threading (docs/broker.md): `numIOThreads` event loops, each with its own thread, ledger
// client and managed-ledger factory. A connection lives on one loop (round robin); a topic is
// owned by one loop (chosen by hashing its name), which alone touches the topic's state.
// Blocking work (bookies, metadata backends) runs on their own threads.

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/config/dynamic_config.h"
#include "broker/service/broker_services.h"
#include "broker/service/metrics.h"
#include "common/asio.h"
#include "common/gate.h"
#include "common/logging.h"

namespace magnetar::ledger {
class BookKeeper;
class PlacementPolicy;
class TopologyWatcher;
struct BookieTopology;
}
namespace magnetar::metrics {
class Gauge;
}
namespace magnetar::mledger {
class ManagedLedgerFactory;
}
namespace magnetar::net {
class TlsContext;
}

namespace magnetar::auth {
class Authentication;
}  // namespace magnetar::auth

namespace magnetar::broker {

using auth::Authentication;
class Authorization;
class Connection;
struct ConnectionContext;
class NamespaceService;
class ReplicationService;
class SchemaRegistry;
class TopicRegistry;

class Broker {
 public:
  // Binds the listeners and starts the event loop threads. Errors: a port is taken; with
  // brokerServicePortTls, a TLS file missing or invalid (the message names it).
  static Result<std::unique_ptr<Broker>> start(BrokerConfig config,
                                               metadata::MetadataStores stores);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Closes connections and topics, stops the loops (idempotent; from any thread but the
  // broker's loops).
  void stop();
  int port() const { return port_; }
  // The TLS port, or 0 without brokerServicePortTls.
  int tls_port() const { return tls_port_; }
  const BrokerConfig& config() const { return config_; }
  // The first loop (listener, namespace service, metadata-only work).
  Executor executor() { return loops_.front()->io.get_executor(); }
  metadata::MetadataStore& store() { return *stores_.cluster; }
  metadata::MetadataStore& configuration_store() { return *stores_.configuration; }
  // What the admin routes and connections use (service/broker_services.h).
  BrokerServices services();
  TopicRegistry& topics() { return *topics_; }
  // The configuration in force: this broker's with the cluster's dynamic overrides.
  const DynamicConfig& dynamic_config() const;
  SchemaRegistry& schemas() { return *schemas_; }
  NamespaceService& namespaces() { return *namespaces_; }
  int64_t connection_count() const;

 private:
  struct Loop {
    asio::io_context io;
    std::thread thread;
    // The loop's placement policy, shared with bk (which uses it on this loop).
    std::shared_ptr<ledger::PlacementPolicy> placement;
    std::unique_ptr<ledger::BookKeeper> bk;
    std::unique_ptr<mledger::ManagedLedgerFactory> factory;
  };

  Broker(BrokerConfig config, metadata::MetadataStores stores);
  Task<void> accept_loop(asio::ip::tcp::acceptor* acceptor, bool tls);
  // Registers and starts a connection (on its loop).
  void serve(std::shared_ptr<Connection> cnx);
  // The TLS handshake of an accepted socket (on its loop, bounded), then serve().
  Task<void> handshake_then_serve(asio::ip::tcp::socket socket);
  void forget_connection(Connection* cnx);
  std::string next_producer_name();
  // Until stop(): the connections gauge.
  Task<void> gauge_loop();
  // Hands a new /bookies topology to every loop's placement policy, on that loop.
  void apply_topology(const ledger::BookieTopology& topology);

  BrokerConfig config_;
  metadata::MetadataStores stores_;
  log::Logger log_;
  // Every coroutine spawned by the broker, its connections and topics joins it; stop() waits
  // for them. Declared before the loops: it outlives the frames they destroy.
  Gate gate_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<asio::ip::tcp::acceptor> tls_acceptor_;  // with brokerServicePortTls
  std::shared_ptr<net::TlsContext> tls_;
  std::unique_ptr<SchemaRegistry> schemas_;
  std::unique_ptr<NamespaceService> namespaces_;
  std::unique_ptr<TopicRegistry> topics_;
  std::unique_ptr<ReplicationService> replication_;
  std::unique_ptr<Authentication> authentication_;  // null: authenticationEnabled=false
  std::unique_ptr<Authorization> authorization_;    // null: authorizationEnabled=false
  std::unique_ptr<ConnectionContext> connection_context_;
  std::shared_ptr<metrics::Gauge> connections_gauge_;
  ConnectionCounters connection_counters_;  // pulsar_connection_{created,closed}_total_count
  std::unique_ptr<asio::steady_timer> gauge_timer_;  // gauge_loop()'s, on the first loop
  // Follows /bookies on the first loop (its reads join gate_).
  std::unique_ptr<ledger::TopologyWatcher> topology_watcher_;
  int port_ = 0;
  int tls_port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> producer_counter_{0};
  std::atomic<uint64_t> next_loop_{0};
  mutable std::mutex connections_mu_;
  std::map<Connection*, std::weak_ptr<Connection>> connections_;
};

}  // namespace magnetar::broker
