#pragma once
// The broker: the Pulsar binary protocol on brokerServicePort (and over TLS on
// brokerServicePortTls when set), topics on managed ledgers,
// topic lookup (in standalone, and until namespace ownership is built, every topic is
// served here: lookups answer Connect to this broker), partitioned-topic metadata, stats.
//
// Threading (docs/broker.md): `numIOThreads` event loops, each with its own thread, ledger
// client and managed-ledger factory. A connection lives on one loop (round robin); a topic is
// owned by one loop (chosen by hashing its name), which alone touches the topic's state:
// connections post their commands to it, and the topic sends frames back through
// Connection::write, which hops to the connection's loop. Blocking work (bookies, metadata
// backends) runs on their own threads.

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker_config.h"
#include "common/asio.h"
#include "common/logging.h"
#include "protocol/topic_name.h"

namespace magnetar::ledger {
class BookKeeper;
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

namespace magnetar::broker {

class Connection;
class NamespaceService;
class PersistentTopic;
class SchemaRegistry;

// Counters of one loaded topic, for load reports and bundle splits.
struct TopicLoad {
  protocol::TopicName name;
  int64_t msgs_in = 0, bytes_in = 0, msgs_out = 0, bytes_out = 0;
  int64_t producers = 0, consumers = 0;
};

class Broker {
 public:
  // Binds the listeners and starts the event loop threads. Errors: a port is taken; with
  // brokerServicePortTls, a TLS file missing or invalid (the message names it).
  static Result<std::unique_ptr<Broker>> start(BrokerConfig config,
                                               metadata::MetadataStores stores);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Closes connections and topics, stops the loops (idempotent; from any other thread).
  void stop();
  int port() const { return port_; }
  // The TLS port, or 0 without brokerServicePortTls.
  int tls_port() const { return tls_port_; }
  const BrokerConfig& config() const { return config_; }
  // The first loop (listener, metadata-only work).
  Executor executor() { return loops_.front()->io.get_executor(); }
  // The loop that owns a topic.
  Executor topic_executor(const std::string& topic);
  metadata::MetadataStore& store() { return *stores_.cluster; }
  metadata::MetadataStore& configuration_store() { return *stores_.configuration; }
  SchemaRegistry& schemas() { return *schemas_; }
  // Bundle ownership and lookups (namespace_service.h).
  NamespaceService& namespaces() { return *namespaces_; }
  log::Logger& log() { return log_; }

  // --- From any loop ---
  // The topic, loaded (its managed ledger opened) on first use, on its own loop: use the
  // result only there (topic->executor()). create = false: only if it exists already.
  Task<Result<std::shared_ptr<PersistentTopic>>> get_topic(protocol::TopicName name, bool create);
  // Whether a client's use may create the topic: allowAutoTopicCreation, or a partition of
  // an existing partitioned topic (created on demand, as Pulsar does).
  Task<bool> may_auto_create(protocol::TopicName name);
  // Partitions of a topic (0: not partitioned); creates a partitioned topic when asked and
  // auto-creation says so.
  Task<Result<int>> partitions(protocol::TopicName name, bool auto_create);
  Task<Result<bool>> namespace_exists(std::string ns);
  Task<Result<std::vector<std::string>>> topics_of_namespace(std::string ns);
  std::string next_producer_name();
  // Closes and forgets every loaded topic `which` selects (their clients reconnect and
  // look the topic up again); returns how many. Topics loading meanwhile check ownership
  // again once loaded.
  Task<int> close_topics(std::function<bool(const protocol::TopicName&)> which);
  Task<std::vector<TopicLoad>> topic_loads();
  // Deletes a topic owned here with its managed ledger and cursors. Errors: kNotFound,
  // kAlreadyExists when clients are connected and not `force` (they are disconnected
  // with force).
  Task<Status> delete_topic(protocol::TopicName name, bool force);
  void forget_connection(Connection* cnx);
  int64_t connection_count() const;

  // --- On the topic's loop ---
  std::shared_ptr<PersistentTopic> loaded_topic(const std::string& name) const;

 private:
  struct Loop {
    asio::io_context io;
    std::thread thread;
    std::unique_ptr<ledger::BookKeeper> bk;
    std::unique_ptr<mledger::ManagedLedgerFactory> factory;
    std::map<std::string, std::shared_ptr<PersistentTopic>> topics;
    std::map<std::string, std::vector<std::function<void(bool)>>> loading;
  };

  Broker(BrokerConfig config, metadata::MetadataStores stores);
  Loop& loop_for(const std::string& topic) const;
  Task<Result<std::shared_ptr<PersistentTopic>>> load_topic(Loop* loop, protocol::TopicName name,
                                                            bool create);
  Task<void> accept_loop(asio::ip::tcp::acceptor* acceptor, bool tls);
  // Registers and starts a connection (on its loop).
  void serve(std::shared_ptr<Connection> cnx);
  // The TLS handshake of an accepted socket (on its loop, bounded), then serve().
  Task<void> handshake_then_serve(asio::ip::tcp::socket socket);
  Task<void> maintenance_loop(Loop* loop);

  BrokerConfig config_;
  metadata::MetadataStores stores_;
  log::Logger log_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<asio::ip::tcp::acceptor> tls_acceptor_;  // with brokerServicePortTls
  std::shared_ptr<net::TlsContext> tls_;
  std::unique_ptr<SchemaRegistry> schemas_;
  std::unique_ptr<NamespaceService> namespaces_;
  std::shared_ptr<metrics::Gauge> connections_gauge_;
  int port_ = 0;
  int tls_port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> producer_counter_{0};
  std::atomic<uint64_t> next_loop_{0};
  mutable std::mutex connections_mu_;
  std::map<Connection*, std::weak_ptr<Connection>> connections_;
};

}  // namespace magnetar::broker
