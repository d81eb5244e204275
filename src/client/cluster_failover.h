#pragma once
// Client-side failover between clusters, as the official clients' AutoClusterFailover and
// ControlledClusterFailover (PIP-121):
//
//  - automatic: the service URL the client was made with is the primary; every
//    check_interval its first broker is probed (a TCP connect within the connection
//    timeout). Unreachable for failover_delay, the client moves to the first reachable
//    secondary. On a secondary it goes back to the primary once that has been reachable for
//    switch_back_delay, and moves on when the secondary itself has been unreachable for
//    failover_delay.
//  - controlled: every check_interval an HTTP endpoint is asked for
//    {"serviceUrl": "..."}; a new URL is moved to at once.
//
// With discover_peer_clusters, the secondaries also come from the primary cluster's own
// ClusterData (its peerClusterNames), read over its web service on this thread.
//
// A move swaps the client's service URL and closes its broker connections: producers and
// consumers reconnect by topic name through the new cluster, producers re-sending what is
// pending (nothing the application sent is dropped). Each move is logged and counted.
//
// Threading: its own thread (probes and HTTP calls block there, never on an event loop).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "common/status.h"
#include "magnetar/authentication.h"
#include "magnetar/client.h"

namespace magnetar::client {

class ClusterFailover {
 public:
  // `switch_to` moves the client to a service URL (called on the failover thread).
  // `authentication` (may be null) gives the headers of the discovery's HTTP calls.
  ClusterFailover(std::string primary, ClusterFailoverOptions options,
                  std::chrono::milliseconds probe_timeout,
                  std::function<Status(const std::string&)> switch_to,
                  std::shared_ptr<Authentication> authentication = nullptr);
  ~ClusterFailover();
  ClusterFailover(const ClusterFailover&) = delete;
  ClusterFailover& operator=(const ClusterFailover&) = delete;

  void start();
  // Ends the thread (waits for the probe in flight).
  void stop();

  // Whether the broker of a service URL (its first host) accepts a TCP connection in time.
  static bool reachable(const std::string& service_url, std::chrono::milliseconds timeout);

  // The secondaries learned from the cluster so far (the failover thread's copy; for tests
  // read once the thread is stopped, or racy).
  std::vector<std::string> learned_secondaries() const;

 private:
  void run();
  void check_automatic();
  void check_controlled();
  // Asks the primary's web service for its peers' broker URLs (discover_peer_clusters).
  Status discover_peers();
  std::string discovery_base() const;
  bool move_to(const std::string& url, const char* why);
  // Waits one check interval; false when stopping.
  bool pause();

  const std::string primary_;
  const ClusterFailoverOptions options_;
  const std::chrono::milliseconds probe_timeout_;
  const std::function<Status(const std::string&)> switch_to_;
  const std::shared_ptr<Authentication> authentication_;
  log::Logger log_;
  std::string current_;
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> current_down_since_;
  std::optional<Clock::time_point> primary_up_since_;
  std::vector<std::string> learned_;  // guarded by mu_ (written here, read by tests)
  bool discovered_ = false;
  int checks_since_discovery_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace magnetar::client
