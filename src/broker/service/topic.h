#pragma once
// A persistent topic: producers appending to the topic's managed ledger, subscriptions (a
// cursor and a dispatcher each), and the namespace policies applied to it (dedup.h,
// policies.h).
//
// Threading: a topic, its producers, subscriptions and consumers live on the topic's event
// loop (executor()); connections post their commands there, and what goes back to clients
// goes through the sinks of consumer_sink.h, which hop to the connection's loop.
// Lifetime: owned by the topic registry while loaded; coroutines of the topic keep it alive.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/service/dedup.h"
#include "broker/service/metrics.h"
#include "broker/service/policies.h"
#include "broker/service/producer.h"
#include "broker/service/rates.h"
#include "broker/service/replication_hooks.h"
#include "broker/service/subscription.h"
#include "broker/service/topic_interface.h"
#include "broker/service/topic_producers.h"
#include "common/asio.h"
#include "common/buffer.h"
#include "common/gate.h"
#include "common/logging.h"
#include "mledger/managed_ledger.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

class ReplicatedSubscriptions;
class TopicCompaction;

// The ledger id of Pulsar's MessageId.latest (clients send (INT64_MAX, INT64_MAX) for it);
// MessageId.earliest is (-1, -1), an invalid ledger id.
inline constexpr LedgerId kLatestLedger{INT64_MAX};

class PersistentTopic final : public Topic, public std::enable_shared_from_this<PersistentTopic> {
 public:
  // `executor`: the event loop that owns the topic (and its managed ledger). `config` and
  // `gate` (the broker's task group, joined by every coroutine the topic spawns) outlive it.
  PersistentTopic(const BrokerConfig& config, Gate& gate, Executor executor,
                  protocol::TopicName name, std::shared_ptr<mledger::ManagedLedger> ml);
  ~PersistentTopic() override;
  const Executor& executor() const override { return executor_; }
  const protocol::TopicName& name() const override { return name_; }
  mledger::ManagedLedger& ledger() { return *ml_; }
  const std::shared_ptr<mledger::ManagedLedger>& ledger_ptr() const { return ml_; }
  const BrokerConfig& config() const { return config_; }
  Gate& gate() const { return gate_; }

  // Adds a producer (topic_producers.h). Errors: kTopicTerminated, kQuotaExceeded(Hold),
  // kProducerBusy, kProducerFenced.
  Result<Added> add_producer(const std::shared_ptr<Producer>& producer,
                             TopicProducers::Decided decided) override;
  void remove_producer(uint64_t producer_id, const ProducerSink* owner) override;
  // Disconnects every producer (CLOSE_PRODUCER); they may come back.
  void disconnect_producers();
  // Terminates the topic: no more messages; returns the last one's position. Its producers
  // are disconnected, and refused with TopicTerminatedError when they come back (as Pulsar's
  // terminate does), so that clients learn it at once instead of at their next send.
  Task<Result<mledger::Position>> terminate();
  // Consumers of all its subscriptions.
  size_t consumer_count() const;
  // Since when nobody uses the topic (the inactive topic policy; set at load and by
  // mark_active()).
  std::chrono::steady_clock::time_point last_active() const { return last_active_; }
  void mark_active(std::chrono::steady_clock::time_point now) { last_active_ = now; }
  bool has_replicators() const { return replicators_ != nullptr; }
  // Takes the deduplication snapshot when its interval has passed.
  void snapshot_deduplication_if_due(std::chrono::steady_clock::time_point now) {
    if (dedup_) dedup_->maybe_snapshot(now);
  }
  // The producers that are other clusters' replicators.
  std::vector<std::shared_ptr<const Producer>> replicator_producers() const;

  // Stores one entry (metadata + payload as received). `done` gets its position, nullopt
  // for a duplicate already stored (deduplication), or the failure: kDuplicateInFlight
  // (the same sequence id is still being stored), mledger kClosed (the topic closed under
  // the send: its producers were told to reconnect), the managed ledger's others.
  void publish(const std::shared_ptr<Producer>& producer, Buffer entry, SendInfo send,
               std::function<void(Published)> done) override;
  bool deduplication_enabled() const { return dedup_ && dedup_->producers_enabled(); }
  // Highest sequence id accepted from the producer (-1: none, or no deduplication).
  int64_t last_sequence_id(const std::string& producer) const override;
  // Opens the `pulsar.dedup` cursor (if not open yet) and rebuilds the producers' sequence
  // ids; producer deduplication is on from then on.
  Task<Status> enable_deduplication();
  // The same for replicated sends only (a replicator's producer registers): their source
  // positions are tracked whether or not producer deduplication is on.
  Task<Status> enable_replicated_deduplication();
  // The last source position stored from cluster `source` ((-1, -1): none, or not tracked).
  mledger::Position last_replicated(const std::string& source) const;

  // The replicators reading this topic (set by the replication room; null: none).
  void set_replicators(std::shared_ptr<const TopicReplicators> replicators) {
    replicators_ = std::move(replicators);
  }
  const std::shared_ptr<const TopicReplicators>& replicators() const { return replicators_; }
  // Replicated subscriptions (replicated_subscriptions.h).
  ReplicatedSubscriptions& replicated_subscriptions() { return *replicated_subscriptions_; }
  // Stores a server marker (markers.h); `stored` (if set) gets its position first. Every
  // durable subscription acknowledges it at once: markers never count in a backlog.
  void write_marker(BufferChain entry, std::function<void(mledger::Position)> stored = {});
  // Acknowledges on `sub` the markers it has not passed yet (a subscription created, or
  // moved by a peer's UPDATE, behind markers the others passed when they were stored).
  Task<void> pass_markers_behind(std::shared_ptr<Subscription> sub);

  // The topic's compaction (topic_compaction.h): its compacted ledger, runs and status.
  const std::shared_ptr<TopicCompaction>& compaction() const { return compaction_; }

  // Errors: kReservedName, the managed ledger's.
  Task<Result<std::shared_ptr<Subscription>>> subscribe(const std::string& name, SubType type,
                                                        bool durable,
                                                        wire::CommandSubscribe::InitialPosition,
                                                        std::optional<mledger::Position> start);
  // Errors: kSubscriptionNotFound, kSubscriptionBusy (other consumers, not forced).
  Task<Status> unsubscribe(const std::string& name, bool force);
  std::shared_ptr<Subscription> find_subscription(const std::string& name) const;
  const std::map<std::string, std::shared_ptr<Subscription>>& subscriptions() const {
    return subscriptions_;
  }
  void remove_non_durable(const std::string& name);
  // Drops the non-durable subscriptions that have had no consumer since `before` (readers
  // that left after a seek and did not come back).
  void remove_abandoned_non_durable(std::chrono::steady_clock::time_point before);
  std::vector<std::string> subscription_names() const;
  bool has_clients() const;
  // The first entry published at or after `time_ms` (the end when none is).
  Task<Result<mledger::Position>> position_for_time(uint64_t time_ms);

  void set_policies(TopicPolicies policies);
  // A changed namespace policy, applied to the loaded topic: TTL and backlog quota at the
  // next check, retention at the next trim, deduplication at once (on: sequence ids rebuilt
  // from the snapshot; off: producers' ids forgotten).
  Task<void> apply_policies(TopicPolicies policies);
  const TopicPolicies& policies() const override { return policies_; }

  // The rate limits of the policies (dispatch_rate.h): the topic's dispatch limiter (shared
  // by its subscriptions), and a new limiter for one subscription or replicator, kept at
  // the policies' limit while it lives.
  const std::shared_ptr<RateLimiter>& dispatch_limiter() const { return dispatch_limiter_; }
  std::shared_ptr<RateLimiter> subscription_limiter();
  std::shared_ptr<RateLimiter> replicator_limiter();
  // The subscribe rate: whether consumer `who` (host and consumer name) may subscribe now,
  // counting this one.
  bool allow_subscribe(const std::string& who);

  // Closes producers and consumers (they reconnect) and the managed ledger.
  Task<void> close();
  // Counters for load reports.
  using Totals = TopicTotals;
  Totals totals() const;
  nlohmann::json stats() const;
  // Sets the gauges (storage, backlog, counts) of the topic and its subscriptions.
  void refresh_metrics();
  // Ends a stats period of `seconds`: the rates of the topic, its producers, subscriptions
  // and consumers, and the period's write latency and entry size buckets (as Pulsar's
  // statsUpdateFrequencyInSecs does).
  void update_rates(double seconds);

 private:
  const BrokerConfig& config_;
  Gate& gate_;
  const Executor executor_;
  const protocol::TopicName name_;
  std::shared_ptr<mledger::ManagedLedger> ml_;
  log::Logger log_;
  TopicProducers producers_;
  std::unique_ptr<Deduplication> dedup_;
  std::shared_ptr<const TopicReplicators> replicators_;
  std::shared_ptr<TopicCompaction> compaction_;
  std::unique_ptr<ReplicatedSubscriptions> replicated_subscriptions_;
  // Acknowledges the marker at `p` on every durable subscription, and remembers it.
  void pass_marker(mledger::Position p);
  // The markers stored since the topic was loaded (the latest kRememberedMarkers), so that a
  // subscription created or moved behind them later acknowledges them too.
  static constexpr size_t kRememberedMarkers = 4096;
  std::deque<mledger::Position> recent_markers_;
  TopicPolicies policies_;
  // Applies the policies' rate limits to the limiters.
  void apply_rate_limits();
  std::shared_ptr<RateLimiter> dispatch_limiter_ = std::make_shared<RateLimiter>();
  RateLimiter publish_limiter_;
  std::vector<std::weak_ptr<RateLimiter>> subscription_limiters_, replicator_limiters_;
  std::map<std::string, std::unique_ptr<TokenBucket>> subscribe_buckets_;  // by consumer
  std::chrono::steady_clock::time_point last_active_ = std::chrono::steady_clock::now();
  TopicMetrics metrics_;
  std::shared_ptr<metrics::Gauge> topics_count_;  // of the namespace, on this broker
  std::map<std::string, std::shared_ptr<Subscription>> subscriptions_;
  int64_t msgs_in_ = 0;
  int64_t bytes_in_ = 0;
  int64_t entries_in_ = 0;
  RateMeter in_rate_, entry_in_rate_;
  double out_msg_rate_ = 0, out_byte_rate_ = 0;  // the subscriptions' sums
  PeriodBuckets write_latency_{write_latency_bounds_ms()};
  PeriodBuckets entry_size_{entry_size_bounds_bytes()};
};

}  // namespace magnetar::broker
