#pragma once
// Which brokers the proxy sends lookups, admin requests and data connections to
// (reference §6.2): either the static brokerServiceURL[TLS] / brokerWebServiceURL[TLS] of
// proxy.conf (each may list several hosts, used in turn), or the brokers registered in the
// cluster's metadata store (/loadbalance/brokers/<host:port>, the JSON each broker's load
// manager writes with its pulsarServiceUrl[Tls] and webServiceUrl[Tls]), used round robin.
//
// The registered list is read at start, again on every change the store notifies under
// /loadbalance/brokers, and every `refresh_interval` in case a notification was lost; a read
// that fails keeps the last list. No lookup waits for the store.
//
// Threading: the list is swapped whole under a mutex and read by the proxy's event loops
// (lookups and connection set-up only, never per message); the refresh runs on `executor`.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/gate.h"
#include "common/logging.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::proxy {

struct Target;

struct BrokerUrls {
  std::string service_url;      // pulsar://host:port
  std::string service_url_tls;  // pulsar+ssl://host:port ("" without TLS)
  std::string web_url;          // http://host:port
  std::string web_url_tls;      // https://host:port ("" without TLS)
};

// "No active broker is available" (Pulsar's text), Errc::kUnavailable.
Status no_active_broker();

class BrokerDiscovery {
 public:
  struct Options {
    // Static: one URL per host of each (empty: discover through `store`).
    std::vector<std::string> service_urls;
    std::vector<std::string> web_urls;
    // Use the brokers' TLS URLs (tlsEnabledWithBroker).
    bool tls = false;
    std::shared_ptr<metadata::MetadataStore> store;
    std::chrono::milliseconds refresh_interval{5000};
  };
  BrokerDiscovery(Executor executor, Options options, Gate& gate);
  ~BrokerDiscovery();

  // Reads the registered brokers once and starts following changes (nothing to do when
  // static). Fails only when the store cannot be read at all.
  Task<Status> start();
  // Stops following the store (before the store closes).
  void stop();

  // The binary URL to send the next lookup to (round robin), or no_active_broker().
  Result<std::string> next_service_url();
  // The web URL to send the next admin or lookup request to.
  Result<std::string> next_web_url();
  // Whether `target` (host:port) is the binary address of a registered broker (static
  // discovery: one of the configured hosts).
  bool is_active_broker(const Target& target) const;
  // The brokers known now.
  std::vector<BrokerUrls> brokers() const;

 private:
  Task<void> follow();
  Task<Status> refresh();
  Result<std::string> next(bool web);

  Executor executor_;
  Options options_;
  Gate& gate_;
  log::Logger log_;
  mutable std::mutex mu_;
  std::vector<BrokerUrls> brokers_;  // guarded by mu_
  std::atomic<uint64_t> next_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> dirty_{false};  // a change was notified since the last read
  metadata::ListenerId listener_ = 0;
  std::shared_ptr<asio::steady_timer> wakeup_;
};

}  // namespace magnetar::proxy
