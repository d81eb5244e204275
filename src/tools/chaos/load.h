#pragma once
// The load a chaos fault runs under, and the checker that decides whether it lost anything.
//
// One producer per topic (our client library, deduplicating producer names, no send timeout:
// what is pending waits for the cluster to come back) sends "<topic>:<seq>" at a fixed rate
// from one thread; one durable Shared consumer per topic receives and acknowledges. The checker
// records every acknowledged send (its sequence number, the message id the broker gave it and
// when the acknowledgement came) and, once the load stopped and drained, reads every topic
// back from the start with a reader:
//
//   lost         acknowledged, never read back
//   duplicated   read back more than once (the brokers deduplicate: must be 0)
//   undelivered  acknowledged, never received by the subscription's consumer
//   misplaced    read back at another id than the one acknowledged
//
// Threading: the sending thread and the consumers' threads are the Load's own; the client's
// callbacks land on its IO thread; the public methods are called from one driving thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "magnetar/client.h"

namespace magnetar::tools::chaos {

using Clock = std::chrono::steady_clock;

struct LoadOptions {
  std::string service_url;
  std::string topic_prefix;           // <domain>://public/default/<prefix>-<i>
  std::string domain = "persistent";  // or "non-persistent" (the checker's self-test)
  int topics = 2;
  int rate = 200;  // messages per second and topic
  // The consumers acknowledge what they receive. Off against a cluster whose retention we do
  // not set: consumed ledgers may be deleted there, and the read-back would count them lost.
  bool acknowledge = true;
  // The producers batch (the client's default, 10 ms at most); off, each message is its own
  // entry and its latency is the cluster's alone.
  bool batching = true;
};

struct LoadReport {
  int64_t sent = 0;
  int64_t acknowledged = 0;
  int64_t send_errors = 0;
  int64_t lost = 0;
  int64_t duplicated = 0;
  int64_t undelivered = 0;
  int64_t misplaced = 0;
  double held_rate = 0;   // acknowledgements per second between the fault and the end
  double recovery_s = 0;  // the longest wait for an acknowledgement after the fault began
  bool drained = false;   // every send acknowledged or failed in time
  bool verified = false;  // every topic read back to its end in time
  std::string detail;     // what went wrong, for the log
};

// Publish latency (send to acknowledgement) over a window of sends.
struct LatencySummary {
  int64_t count = 0;  // acknowledged sends in the window
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

class Load {
 public:
  // Creates the client, the consumers (subscribed before anything is sent) and the producers,
  // then starts sending.
  static Result<std::unique_ptr<Load>> start(const LoadOptions& options);
  ~Load();

  const std::vector<std::string>& topics() const { return topics_; }
  // The fault begins now: recovery and the held rate are measured from here.
  void mark_fault();
  // Acknowledged so far (all topics).
  int64_t acknowledged() const;
  // The latency of the acknowledged sends made in [from, to), all topics.
  LatencySummary latency(Clock::time_point from, Clock::time_point to) const;
  // Stops sending, waits (at most `timeout`) until every send is acknowledged or failed and
  // the consumers received every acknowledged message, then reads every topic back.
  LoadReport finish(std::chrono::seconds timeout);

  struct Topic;
  explicit Load(LoadOptions options);

 private:
  void send_loop();
  void consume_loop(Topic& t);
  Status verify(Topic& t, Clock::time_point deadline, LoadReport& report);

  const LoadOptions options_;
  std::vector<std::string> topics_;
  std::unique_ptr<client::Client> client_;
  std::vector<std::unique_ptr<Topic>> state_;
  std::thread sender_;
  std::vector<std::thread> consumers_;
  std::atomic<bool> stop_sending_{false};
  std::atomic<bool> stop_consuming_{false};
  std::atomic<int64_t> fault_at_ns_{0};  // Clock time of mark_fault(); 0 before
};

}  // namespace magnetar::tools::chaos
