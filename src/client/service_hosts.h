#pragma once
// The hosts of a service URL and their health, shared by the binary and the HTTP lookups.
//
// Service URL grammar (as Pulsar's clients accept it):
//
//   service_url := scheme "://" authority ("," authority)* [path]
//   scheme      := "pulsar" | "pulsar+ssl" | "http" | "https"
//   authority   := host [":" port] | "[" ipv6 "]" [":" port]
//
// A missing port takes the scheme's default (6650, 6651, 80, 443). An empty host, a bad
// port or an unknown scheme is kInvalidConfiguration naming the URL. The path is returned
// for the caller to judge (the binary lookups ignore it, the HTTP lookups refuse one).
//
// Health (ServiceHosts): hosts are handed out round robin. A host whose connection failed
// is quarantined (skipped) for a backoff that starts at `initial` and doubles with each
// failure after a quarantine ended, up to `max`; a success ends it and resets the backoff.
// When every host is quarantined, the one whose last failure is the oldest is handed out
// anyway: a caller always has a host to try.
//
// Threading: every ServiceHosts method may be called from any thread (lookups of several
// event loops share one object); a mutex guards the health state. Only lookups and service
// connections touch it, never the per-message path.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace magnetar::client {

// One authority of a URL: the host (without brackets for an IPv6 literal) and the port.
struct Authority {
  std::string host;
  uint16_t port = 0;
  // "host:port", brackets around an IPv6 literal: the form CONNECT's proxy_to_broker_url
  // and Pulsar's Url::hostPort() use.
  std::string host_port() const;
};

// "host", "host:port", "[v6]", "[v6]:port"; `default_port` when no port is given. Errors
// (kInvalidConfiguration) say what is wrong, without naming a URL: callers add it.
Result<Authority> parse_authority(std::string_view text, uint16_t default_port);

// The default port of "pulsar", "pulsar+ssl", "http", "https"; 0 for any other scheme.
uint16_t default_port(std::string_view scheme);

struct ServiceUrl {
  std::string scheme;              // "pulsar", "pulsar+ssl", "http" or "https"
  std::vector<std::string> hosts;  // "<scheme>://<host>:<port>" per authority, in order
  std::string path;                // what follows the authorities: "" or "/..."
};

Result<ServiceUrl> parse_service_url(std::string_view url);

class ServiceHosts {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Options {
    // Quarantine of a failed host; initial 0: none (plain round robin).
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{30'000};
  };

  // `urls`: at least one.
  ServiceHosts(std::vector<std::string> urls, Options options);

  size_t size() const { return urls_.size(); }
  const std::string& url(size_t index) const { return urls_[index]; }

  // The index of the host to try next: the next one in turn that is not quarantined at
  // `now`; when all are, the least recently failed.
  size_t next(TimePoint now = std::chrono::steady_clock::now());
  // A connection to host `index` failed at `now`: its quarantine starts (when it was not
  // quarantined already; a failure while quarantined, from an attempt made anyway or
  // started earlier, only counts as the latest failure). Returns the quarantine started
  // (zero when none).
  std::chrono::milliseconds failed(size_t index, TimePoint now = std::chrono::steady_clock::now());
  // A connection to host `index` succeeded: healthy again, its backoff reset.
  void succeeded(size_t index);

  bool quarantined(size_t index, TimePoint now = std::chrono::steady_clock::now()) const;
  // Failures recorded for host `index` since the client started (tests, logs).
  int64_t failures(size_t index) const;

 private:
  struct Health {
    std::chrono::milliseconds backoff{0};  // the last quarantine; 0: healthy
    TimePoint quarantined_until{};         // skipped before this
    TimePoint last_failure{};              // orders the hosts when all are quarantined
    int64_t failures = 0;
  };

  const std::vector<std::string> urls_;
  const Options options_;
  mutable std::mutex mu_;  // guards everything below
  std::vector<Health> health_;
  size_t next_ = 0;  // where the round robin goes on
};

}  // namespace magnetar::client
