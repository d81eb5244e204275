#pragma once
// The broker: the Pulsar binary protocol on brokerServicePort, topics on managed ledgers,
// topic lookup (in standalone, and until namespace ownership is built, every topic is
// served here: lookups answer Connect to this broker), partitioned-topic metadata, stats.
//
// Threading: one event loop thread runs the listener, every connection, topic and the
// managed-ledger factory; blocking work (bookies, metadata backends) runs on their own
// threads. Public methods other than start/stop/port run on that loop.

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <set>
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

namespace magnetar::broker {

class Connection;
class PersistentTopic;
class SchemaRegistry;

class Broker {
 public:
  // Binds the listener and starts the event loop thread. Errors: the port is taken.
  static Result<std::unique_ptr<Broker>> start(BrokerConfig config,
                                               metadata::MetadataStores stores);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Closes connections and topics, stops the loop (idempotent; from any other thread).
  void stop();
  int port() const { return port_; }
  const BrokerConfig& config() const { return config_; }
  Executor executor() { return io_.get_executor(); }
  metadata::MetadataStore& store() { return *stores_.cluster; }
  metadata::MetadataStore& configuration_store() { return *stores_.configuration; }
  SchemaRegistry& schemas() { return *schemas_; }
  log::Logger& log() { return log_; }

  // --- On the event loop ---
  // The topic, loaded (its managed ledger opened) on first use. create = false: only if it
  // exists already. Errors carry a ServerError (TopicNotFound, ...) in the message.
  Task<Result<std::shared_ptr<PersistentTopic>>> get_topic(protocol::TopicName name, bool create);
  // Partitions of a topic (0: not partitioned); creates a partitioned topic when asked and
  // auto-creation says so.
  Task<Result<int>> partitions(protocol::TopicName name, bool auto_create);
  Task<Result<bool>> namespace_exists(std::string ns);
  Task<Result<std::vector<std::string>>> topics_of_namespace(std::string ns);
  std::string next_producer_name();
  std::shared_ptr<PersistentTopic> loaded_topic(const std::string& name) const;
  void forget_connection(Connection* cnx);
  nlohmann::json topic_stats(const std::string& name) const;
  nlohmann::json all_topic_stats() const;
  int64_t connection_count() const { return static_cast<int64_t>(connections_.size()); }

 private:
  Broker(BrokerConfig config, metadata::MetadataStores stores);
  Task<void> accept_loop();
  Task<void> maintenance_loop();

  BrokerConfig config_;
  metadata::MetadataStores stores_;
  log::Logger log_;
  asio::io_context io_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<ledger::BookKeeper> bk_;
  std::unique_ptr<mledger::ManagedLedgerFactory> factory_;
  std::unique_ptr<SchemaRegistry> schemas_;
  std::shared_ptr<metrics::Gauge> connections_gauge_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
  std::map<std::string, std::shared_ptr<PersistentTopic>> topics_;
  std::map<std::string, std::vector<std::function<void(bool)>>> loading_;
  std::map<Connection*, std::weak_ptr<Connection>> connections_;
  uint64_t producer_counter_ = 0;
};

}  // namespace magnetar::broker
