#pragma once
// Broker registration, load reports and bundle placement (../shared/reference/
// pulsar-internals.md §5.5).
//
//   /loadbalance/brokers/<host:webport>   ephemeral, JSON LocalBrokerData: URLs, cpu/memory
//                                         usage, msgRateIn/Out, msgThroughputIn/Out,
//                                         numTopics/numBundles/numProducers/numConsumers,
//                                         bundles, lastUpdate, brokerVersionString
//   /loadbalance/leader/candidate-N       the leader election (metadata/leader_election.h);
//                                         value: {"serviceUrl", "brokerUrl", "brokerId"}
//   /loadbalance/unload-hints/<t>/<ns>/<range>   where an unloaded bundle goes next
//
// A report is written at start, whenever the set of owned bundles changes (at most once a
// second) and every loadBalancerReportUpdateMinIntervalMillis when the load moved by more
// than loadBalancerReportUpdateThresholdPercentage (always after the max interval).
//
// Placement, on the leader: candidates are the registered brokers (minus one a hint
// excludes); a broker whose cpu or memory usage is above
// loadBalancerBrokerOverloadedThresholdPercentage only gets bundles when all are. Among the
// rest, the least loaded by message rate (in + out) wins, brokers within 10 % of the lowest
// rate counting as equal; ties go to the broker with fewest bundles, counting the bundles
// the leader assigned that its report does not show yet, so a burst of lookups spreads out.
//
// Threading: on the broker's first loop (NamespaceService's executor).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "broker/namespace/namespace_service.h"
#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"

namespace magnetar::metadata {
class LeaderElection;
}

namespace magnetar::broker {

// Automatic bundle split (loadBalancerAutoBundleSplitEnabled and the
// loadBalancerNamespaceBundleMax* thresholds): checked by each broker for its own bundles when
// it writes a report; a bundle past any threshold, in a namespace with fewer than
// maximum_bundles bundles, is split in two (NamespaceService::split_bundle), its halves
// unloaded when unload_split_bundles.
struct BundleSplitOptions {
  bool enabled = true;
  bool unload_split_bundles = true;
  int32_t maximum_bundles = 128;
  int64_t max_topics = 1000;
  int64_t max_sessions = 1000;
  double max_msg_rate = 30000;
  double max_bandwidth_mbytes = 100;
};

struct LoadManagerOptions {
  std::chrono::milliseconds report_min_interval{5000};  // ...ReportUpdateMinIntervalMillis
  std::chrono::milliseconds report_max_interval{15 * 60 * 1000};  // ...MaxIntervalMinutes
  double report_threshold_percentage = 10;      // loadBalancerReportUpdateThresholdPercentage
  double overloaded_threshold_percentage = 85;  // ...BrokerOverloadedThresholdPercentage
  BundleSplitOptions split;
  // The process's CPU time in seconds (default: utime + stime of /proc/self/stat, counted in
  // clock ticks). Tests give a fake.
  std::function<double()> cpu_seconds;
};

struct Placement {
  BrokerUrls target;
  bool self = false;
  bool via_leader = false;  // this broker is not the leader: ask the leader to place it
};

class LoadManager {
 public:
  // `namespaces` outlives the load manager.
  LoadManager(NamespaceService& namespaces, LoadManagerOptions options);
  ~LoadManager();

  // Registers this broker, enters the leader election, starts reporting.
  Task<Status> start();
  // Leaves the election and deletes the registration.
  Task<void> stop();

  // host:webport, the name under /loadbalance/brokers.
  const std::string& broker_id() const { return broker_id_; }
  bool is_leader() const;
  // The leader's {"serviceUrl", "brokerUrl", "brokerId"} JSON, nullopt without a leader.
  Task<Result<std::optional<std::string>>> leader();
  // Registered broker ids.
  Task<Result<std::vector<std::string>>> brokers();
  // This broker's last load report (JSON, as registered), nullopt before the first.
  Task<Result<std::optional<std::string>>> own_report();

  // Where an unowned bundle (full name) should go.
  Task<Result<Placement>> place(std::string bundle);
  // A bundle was taken or released here: report soon.
  void bundles_changed();
  // Leaves a hint for the next placement of an unloaded bundle.
  Task<void> hint_unloaded(std::string bundle, std::string destination);

 private:
  struct Report;
  Task<void> report_loop();
  Task<Status> write_report(bool force);
  Task<Result<Placement>> choose(const std::string& bundle);
  // Splits the bundles of this broker past a threshold; `seconds` since the last check.
  Task<void> split_hot_bundles(const std::vector<TopicLoad>& loads, double seconds);
  std::string report_json(const Report& r) const;

  NamespaceService& namespaces_;
  const LoadManagerOptions options_;
  const std::string broker_id_;
  log::Logger log_;
  std::unique_ptr<metadata::LeaderElection> election_;
  std::unique_ptr<Report> last_;
  // Leader only: bundle -> (broker id, when) assigned but maybe not in its report yet.
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>>
      preallocated_;
  bool changed_ = false;
  bool stopping_ = false;
  bool loop_running_ = false;  // report_loop() has not returned
  std::unique_ptr<asio::steady_timer> wake_;
  std::chrono::steady_clock::time_point last_write_{};
  // For rates: counters and the time they were read.
  struct Counters {
    double msgs_in = 0, bytes_in = 0, msgs_out = 0, bytes_out = 0;
    std::chrono::steady_clock::time_point at{};
    // The CPU time counter and when it was read: advanced only by a CPU measurement, which
    // needs a window of kMinCpuWindow (see write_report).
    double cpu_seconds = 0;
    std::chrono::steady_clock::time_point cpu_at{};
  };
  Counters previous_;
  // Per bundle (full name): messages and bytes (in + out) at the last check.
  std::map<std::string, std::pair<double, double>> bundle_counters_;
};

}  // namespace magnetar::broker
