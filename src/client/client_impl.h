#pragma once
// The shared state behind a Client: event loops, the connection pools, lookup, id
// generators, and the producers and consumers to close with the client.
//
// Threading: `io_threads` event loops, one thread each. Every producer and consumer is bound
// to one loop for its life, and so are the connections it uses: each loop has its own pool
// keyed by (logical address, physical address), touched only on that loop. A separate
// listener thread runs message listeners. The id generators are atomics; the registry of
// producers and consumers has a mutex (touched only on create and close).

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/connection.h"
#include "client/sync.h"
#include "common/asio.h"
#include "common/logging.h"
#include "magnetar/client.h"

namespace magnetar::client {

class ClusterFailover;
class LookupService;
class ServiceHosts;

// Something the client closes when it closes (producers, consumers).
class Closeable {
 public:
  virtual ~Closeable() = default;
  // Blocking, bounded by the operation timeout; called from a user thread.
  virtual Status close() = 0;
  // Starts closing without waiting (when the application drops its last handle).
  virtual void close_async() = 0;
};

struct BrokerAddress {
  std::string logical;   // the broker's service URL
  std::string physical;  // where to open the TCP connection
};

class ClientImpl : public std::enable_shared_from_this<ClientImpl> {
 public:
  static Result<std::shared_ptr<ClientImpl>> create(const std::string& service_url,
                                                    const ClientOptions& options);
  ~ClientImpl();

  const ClientOptions& options() const { return options_; }
  const log::Logger& log() const { return log_; }
  bool closed() const { return closed_.load(); }

  // Round robin over the loops.
  int pick_loop();
  Executor executor(int loop) { return loops_[static_cast<size_t>(loop)]->io.get_executor(); }
  Executor listener_executor() { return listener_->io.get_executor(); }

  uint64_t next_request_id() { return request_id_.fetch_add(1); }
  uint64_t next_producer_id() { return producer_id_.fetch_add(1); }
  uint64_t next_consumer_id() { return consumer_id_.fetch_add(1); }

  // --- On loop `loop` ---
  Task<Result<std::shared_ptr<ClientConnection>>> get_connection(int loop, std::string logical,
                                                                 std::string physical,
                                                                 Deadline deadline);
  // A connection to one of the service URL's hosts: round robin, skipping the hosts whose
  // connection failed lately (service_hosts.h); on a failure, the next host at once.
  Task<Result<std::shared_ptr<ClientConnection>>> service_connection(int loop, Deadline deadline);
  // Through the lookup service of the service URL's scheme (binary or HTTP:
  // lookup_service.h): the broker serving `topic`, following redirects (at most
  // max_lookup_redirects).
  Task<Result<BrokerAddress>> lookup(int loop, std::string topic, Deadline deadline);
  // Partition count (0: not partitioned).
  Task<Result<int>> partitioned_metadata(int loop, std::string topic, Deadline deadline);
  // The same, retrying transient failures with backoff until the deadline.
  Task<Result<int>> partitions_with_retry(int loop, std::string topic, Deadline deadline);
  Task<Result<std::vector<std::string>>> topics_of_namespace(int loop, std::string ns,
                                                             Deadline deadline);

  // True for pulsar+ssl:// (connections and lookup answers use TLS).
  bool uses_tls() const { return tls_ != nullptr; }

  // Cluster failover (cluster_failover.h): moves to another cluster's service URL (same
  // scheme) and closes every connection, so producers and consumers reconnect through it.
  // From any thread.
  Status switch_service_url(const std::string& url);
  std::string service_url() const;
  int64_t cluster_switches() const { return switches_.load(); }

  // --- From any thread ---
  void track(std::weak_ptr<Closeable> c);
  Status close();

 private:
  struct Loop {
    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread thread;
    std::promise<void> finished;  // set when run() returns
    std::future<void> done = finished.get_future();
    std::map<std::pair<std::string, std::string>, std::shared_ptr<ClientConnection>> pool;
  };

  ClientImpl(std::vector<std::string> urls, const ClientOptions& options);
  void start_loop(Loop& loop);
  // Lets the loops run dry (graceful: every coroutine has ended), forcing them after `grace`.
  void stop_loops(std::chrono::milliseconds grace);

  mutable std::mutex urls_mu_;  // guards service_url_ and hosts_ (failover swaps them)
  std::string service_url_;
  // The pulsar:// hosts and their health (null for an http:// client); shared with the
  // lookups running on the loops while a failover swaps it.
  std::shared_ptr<ServiceHosts> hosts_;
  std::unique_ptr<ClusterFailover> failover_;
  std::atomic<int64_t> switches_{0};
  const ClientOptions options_;
  std::shared_ptr<net::TlsContext> tls_;  // set by create() for pulsar+ssl://; else null
  // Binary, or HTTP for http:// (set by create()).
  std::unique_ptr<LookupService> lookup_;
  log::Logger log_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::unique_ptr<Loop> listener_;
  std::atomic<uint64_t> next_loop_{0};
  std::atomic<uint64_t> request_id_{1};
  std::atomic<uint64_t> producer_id_{1};
  std::atomic<uint64_t> consumer_id_{1};
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::vector<std::weak_ptr<Closeable>> tracked_;
};

}  // namespace magnetar::client
