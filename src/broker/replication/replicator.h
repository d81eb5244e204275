#pragma once
// One replicator: a local topic (or partition) to the same-named topic of one remote cluster.
//
// It reads the topic through its own durable cursor, `pulsar.repl.<remote>` (so retention
// keeps whatever is not replicated yet, however long the remote is away), and publishes each
// entry through a RawProducer named `pulsar.repl.<local>--><remote>`: the stored metadata and
// payload unchanged (producer name, sequence id, publish and event time, key, properties,
// compression, batches) plus `replicated_from = <local>` and the entry's source position.
// An entry whose message came from another cluster, or whose replicate_to leaves this remote
// out (["__local__"] included), or a marker other than the replicated-subscription ones
// (which travel per their replicate_to), is acknowledged without being sent. An entry is
// acknowledged on the cursor when the remote stored it.
//
// Nothing is lost: the cursor only moves over what the remote acknowledged. Nothing is
// doubled: after a reconnection, a failed send or a restart of either broker the replicator
// re-sends from its mark-delete, and the remote drops what it applied already by source
// position (broker/service/dedup.h), durably.
//
// While the remote cannot be reached the replicator retries with backoff (100 ms doubling to
// 60 s); the client reconnects an established producer by itself and re-sends what is
// pending, in order.
//
// Threading: every member is used on the topic's loop; send completions are posted back to
// it. Coroutines join the broker's gate.

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "broker/replication/replication_metrics.h"
#include "broker/service/dispatch_rate.h"
#include "common/asio.h"
#include "common/backoff.h"
#include "common/gate.h"
#include "common/logging.h"
#include "mledger/managed_ledger.h"

namespace magnetar::wire {
class MessageMetadata;
}
namespace magnetar::client {
class MessageId;
class RawProducer;
}  // namespace magnetar::client

namespace magnetar::broker {

class RemoteClusters;
class RemoteTopics;

class Replicator : public std::enable_shared_from_this<Replicator> {
 public:
  struct Options {
    std::string topic;  // the full topic (partition) name, the same on both sides
    std::string local_cluster;
    std::string remote_cluster;
    int queue_size = 1000;  // sends in flight
    // The topic's message TTL (0: none): older entries are not sent, and while the remote
    // is away the cursor moves past them (msgRateExpired), as Pulsar's TTL does.
    int64_t message_ttl_seconds = 0;
    // The replicator dispatch rate (the topic keeps it at its policy; null: none).
    std::shared_ptr<broker::RateLimiter> rate_limit;
  };
  // The cursor's name for `remote`.
  static std::string cursor_name(const std::string& remote);

  // `ml` and `cursor` (opened by the caller, on `executor`) stay alive with this object;
  // `remotes`, `remote_topics` and `gate` outlive it.
  Replicator(Executor executor, std::shared_ptr<mledger::ManagedLedger> ml,
             std::shared_ptr<mledger::ManagedCursor> cursor, RemoteClusters& remotes,
             RemoteTopics& remote_topics, Gate& gate, Options options);
  ~Replicator();

  void start();
  // Ends the read loop and closes the producer (pending sends are dropped: they are re-sent
  // by the next replicator, from the mark-delete); completes when the loop ended and the
  // last acknowledgements are on the cursor.
  Task<void> stop();

  const std::string& remote() const { return options_.remote_cluster; }
  bool connected() const;
  // Once a second: the rates of the stats and the Prometheus series, and a log line when the
  // connection changed.
  void sample();
  // Pulsar's ReplicatorStats.
  nlohmann::json stats() const;

 private:
  Task<void> run();
  // Makes the remote topic match this one (remote_topics.h), then creates the producer,
  // retrying with backoff; false when stopping.
  Task<bool> connect();
  // While the remote is away: moves the cursor past the entries older than the TTL.
  Task<void> expire();
  bool expired(const wire::MessageMetadata& md) const;
  // Sends or skips each entry of one read.
  void forward(std::vector<mledger::Entry> entries);
  void sent(uint64_t generation, mledger::Position position, int64_t bytes, bool ok,
            const std::string& error);
  // Drops the producer and what it has pending; run() makes a new one and re-reads from the
  // mark-delete.
  void drop_producer();
  void acknowledge(mledger::Position position);
  Task<void> ack_loop();
  Task<void> nap(std::chrono::milliseconds d);
  void wake();
  void sample_rates();
  // Age of the oldest send still waiting for the remote (0: nothing waits).
  int64_t oldest_wait_seconds() const;

  const Executor executor_;
  const std::shared_ptr<mledger::ManagedLedger> ml_;
  const std::shared_ptr<mledger::ManagedCursor> cursor_;
  RemoteClusters& remotes_;
  RemoteTopics& remote_topics_;
  Gate& gate_;
  const Options options_;
  const std::string producer_name_;
  log::Logger log_;

  std::shared_ptr<client::RawProducer> producer_;
  uint64_t generation_ = 0;  // of producer_: completions of a dropped one are ignored
  bool stopping_ = false;
  bool failed_ = false;  // a send failed: drop the producer, rewind, reconnect
  bool was_connected_ = false;
  Backoff backoff_{Backoff::Options{}};  // between producers refused for good
  asio::steady_timer wake_;              // nap() and the wait for room
  asio::steady_timer finished_;          // cancelled when run() and the ack loop have ended
  bool running_ = false;  // run() started and not ended (stop() waits for it)
  std::deque<std::pair<mledger::Position, std::chrono::steady_clock::time_point>> inflight_;
  std::vector<mledger::Position> acks_;
  bool acking_ = false;
  bool expiring_ = false;
  int ticks_ = 0;
  int64_t stalled_logged_at_s_ = 0;  // the wait a stall was last logged at
  std::string last_error_;  // why the last connection attempt failed; "" once connected

  // Stats.
  int64_t msgs_out_ = 0, bytes_out_ = 0, skipped_ = 0, expired_ = 0;
  int64_t sampled_msgs_ = 0, sampled_bytes_ = 0, sampled_expired_ = 0;
  double msg_rate_out_ = 0, throughput_out_ = 0, msg_rate_expired_ = 0;
  std::chrono::steady_clock::time_point sampled_at_;
  std::string namespace_;  // of the topic, for the metrics' labels
  ReplicationMetrics metrics_;
  int64_t connected_since_ms_ = 0;
};

}  // namespace magnetar::broker
