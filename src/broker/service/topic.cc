#include "broker/service/topic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>

#include "broker/service/entry_metadata.h"
#include "broker/service/errors.h"
#include "broker/service/replicated_subscriptions.h"
#include "broker/service/topic_compaction.h"
#include "mledger/errors.h"
#include "protocol/frame.h"
#include "protocol/replication.h"

namespace magnetar::broker {

using mledger::Position;

namespace {

// Subscription names become cursor node names: percent-encoded like topic local names.
std::string encode_component(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '.' || c == '*' || c == '_' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

PersistentTopic::PersistentTopic(const BrokerConfig& config, Gate& gate, Executor executor,
                                 protocol::TopicName name,
                                 std::shared_ptr<mledger::ManagedLedger> ml)
    : config_(config),
      gate_(gate),
      executor_(std::move(executor)),
      name_(std::move(name)),
      ml_(std::move(ml)),
      log_(log::Logger("broker").with("topic", name_.to_string())),
      metrics_(topic_metrics(config.cluster_name, name_.namespace_name(), name_.to_string())),
      topics_count_(topics_count_gauge(config.cluster_name, name_.namespace_name())) {
  topics_count_->inc();
  compaction::CompactorOptions compactor;
  compactor.topic = name_.to_string();
  compactor.retain_null_key = config.topic_compaction_retain_null_key;
  compactor.read_batch = config.managed_ledger_factory.read_batch_size;
  compactor.max_uncompressed_size = static_cast<uint32_t>(config.max_message_size) + (64u << 10);
  compaction_ = std::make_shared<TopicCompaction>(ml_, std::move(compactor));
  replicated_subscriptions_ = std::make_unique<ReplicatedSubscriptions>(*this);
  // Durable subscriptions recovered with the managed ledger.
  for (const auto& [cursor_name, cursor] : ml_->cursors()) {
    if (cursor_name == Deduplication::kCursor) continue;
    if (cursor_name == compaction::kCursor) continue;  // the compactor's
    if (cursor_name.starts_with(protocol::kReplicatorPrefix)) continue;  // a replicator's
    // The subscription type is set by its first consumer.
    auto sub = std::make_shared<Subscription>(*this, cursor_name, wire::CommandSubscribe::Exclusive,
                                              cursor, true);
    cursor->set_active(false);
    subscriptions_[cursor_name] = sub;
  }
}

PersistentTopic::~PersistentTopic() { topics_count_->dec(); }

Result<PersistentTopic::Added> PersistentTopic::add_producer(const std::shared_ptr<Producer>& p,
                                                             TopicProducers::Decided decided) {
  if (ml_->terminated()) return Status(Error::kTopicTerminated, "topic is terminated");
  if (backlog_quota_exceeded(*this)) {
    const char* message = "cannot create producer: the topic's backlog quota is exceeded";
    if (policies_.backlog_quota_policy == "producer_exception") {
      return Status(Error::kQuotaExceeded, message);
    }
    if (policies_.backlog_quota_policy == "producer_request_hold") {
      return Status(Error::kQuotaExceededHold, message);
    }
  }
  return producers_.add(p, std::move(decided), policies_.max_producers, name_.to_string());
}

void PersistentTopic::remove_producer(uint64_t producer_id, const ProducerSink* owner) {
  producers_.remove(producer_id, owner);
}

void PersistentTopic::disconnect_producers() { producers_.disconnect_all(); }

Task<Result<Position>> PersistentTopic::terminate() {
  auto self = shared_from_this();
  auto last = co_await ml_->terminate();
  if (last.ok()) disconnect_producers();
  co_return last;
}

int64_t PersistentTopic::last_sequence_id(const std::string& producer) const {
  return dedup_ ? dedup_->last_sequence_id(producer) : -1;
}

Task<Status> PersistentTopic::enable_deduplication() {
  auto self = shared_from_this();
  if (dedup_) {
    dedup_->enable_producers();
    co_return Status::OK();
  }
  auto dedup = co_await Deduplication::open(*ml_, executor_, gate_, true);
  if (!dedup.ok()) co_return dedup.status();
  if (dedup_) {  // opened meanwhile by a replicator's producer
    dedup_->enable_producers();
  } else {
    dedup_ = std::move(*dedup);
    dedup_->set_snapshot_interval(config_.broker_deduplication_entries_interval,
                                  policies_.dedup_snapshot_interval_seconds);
  }
  co_return Status::OK();
}

void PersistentTopic::set_policies(TopicPolicies policies) {
  policies_ = std::move(policies);
  apply_rate_limits();
}

namespace {

// Updates the live limiters of `list` to `limit`, forgetting those gone.
void update_limiters(std::vector<std::weak_ptr<RateLimiter>>& list, const RateLimit& limit) {
  std::erase_if(list, [&limit](const std::weak_ptr<RateLimiter>& weak) {
    auto l = weak.lock();
    if (l) l->update(limit);
    return !l;
  });
}

std::shared_ptr<RateLimiter> new_limiter(std::vector<std::weak_ptr<RateLimiter>>& list,
                                         const RateLimit& limit) {
  update_limiters(list, limit);  // (forgets the dead ones)
  auto l = std::make_shared<RateLimiter>(limit);
  list.push_back(l);
  return l;
}

}  // namespace

void PersistentTopic::apply_rate_limits() {
  dispatch_limiter_->update(policies_.dispatch_rate);
  publish_limiter_.update(policies_.publish_rate);
  update_limiters(subscription_limiters_, policies_.subscription_dispatch_rate);
  update_limiters(replicator_limiters_, policies_.replicator_dispatch_rate);
  if (!policies_.subscribe_rate.enabled()) subscribe_buckets_.clear();
}

std::shared_ptr<RateLimiter> PersistentTopic::subscription_limiter() {
  return new_limiter(subscription_limiters_, policies_.subscription_dispatch_rate);
}

std::shared_ptr<RateLimiter> PersistentTopic::replicator_limiter() {
  return new_limiter(replicator_limiters_, policies_.replicator_dispatch_rate);
}

bool PersistentTopic::allow_subscribe(const std::string& who) {
  const SubscribeRate& rate = policies_.subscribe_rate;
  if (!rate.enabled()) return true;
  const auto now = TokenBucket::Clock::now();
  const double per_second = static_cast<double>(rate.per_consumer) / rate.period_seconds;
  auto& bucket = subscribe_buckets_[who];
  if (!bucket || bucket->rate() != per_second) {
    bucket = std::make_unique<TokenBucket>(per_second, rate.per_consumer, now);
  }
  if (bucket->available(now) < 1) return false;
  bucket->take(now);
  // Consumers whose buckets are full again are forgotten (one per consumer otherwise).
  if (subscribe_buckets_.size() > 1024) {
    std::erase_if(subscribe_buckets_, [now](auto& entry) {
      return entry.second->available(now) >= entry.second->burst();
    });
  }
  return true;
}

Task<void> PersistentTopic::apply_policies(TopicPolicies policies) {
  auto self = shared_from_this();
  const bool dedup_before = deduplication_enabled();
  const bool dedup_after = policies.deduplication;
  ml_->set_retention(policies.ledger.retention_time_minutes, policies.ledger.retention_size_mb);
  ml_->set_persistence(policies.ledger.ensemble_size, policies.ledger.write_quorum,
                       policies.ledger.ack_quorum, policies.ledger.mark_delete_rate_limit);
  policies_ = std::move(policies);
  apply_rate_limits();
  if (dedup_) {
    dedup_->set_snapshot_interval(config_.broker_deduplication_entries_interval,
                                  policies_.dedup_snapshot_interval_seconds);
  }
  if (dedup_after && !dedup_before) {
    Status st = co_await enable_deduplication();
    if (!st.ok()) {
      log_.warn("cannot enable deduplication: {}", st.to_string());
    }
  } else if (!dedup_after && dedup_before) {
    dedup_->disable_producers();
  }
}

Task<Status> PersistentTopic::enable_replicated_deduplication() {
  auto self = shared_from_this();
  if (dedup_) co_return Status::OK();
  auto dedup = co_await Deduplication::open(*ml_, executor_, gate_, false);
  if (!dedup.ok()) co_return dedup.status();
  if (!dedup_) {
    dedup_ = std::move(*dedup);
    dedup_->set_snapshot_interval(config_.broker_deduplication_entries_interval,
                                  policies_.dedup_snapshot_interval_seconds);
  }
  co_return Status::OK();
}

Position PersistentTopic::last_replicated(const std::string& source) const {
  return dedup_ ? dedup_->last_replicated(source) : Position{};
}

void PersistentTopic::publish(const std::shared_ptr<Producer>& producer, Buffer entry,
                              SendInfo send, std::function<void(Published)> done) {
  if (Status delay = check_delivery_delay(policies_.delayed_delivery, entry); !delay.ok()) {
    done(std::move(delay));  // a delivery delay over the maximum: NotAllowedError
    return;
  }
  const int64_t top = std::max(send.sequence_id, send.highest_sequence_id);
  const bool replicated = dedup_ && send.source_position && !send.replicated_from.empty();
  // The chunks of one message share its sequence id: only the last one is deduplicated and
  // recorded (as Pulsar does).
  const bool dedup =
      !replicated && dedup_ && dedup_->producers_enabled() && !send.chunk_before_last;
  if (replicated || dedup) {
    const auto verdict = replicated
                             ? dedup_->check_replicated(send.replicated_from, *send.source_position)
                             : dedup_->check(producer->name(), send.sequence_id, top);
    switch (verdict) {
      case Deduplication::Verdict::kDuplicate:
        done(std::optional<Position>());
        return;
      case Deduplication::Verdict::kInFlight:
        // Still being stored: the client resends after reconnecting.
        done(Status(Error::kDuplicateInFlight, "a message with this sequence id is being stored"));
        return;
      case Deduplication::Verdict::kNew:
        break;
    }
  }
  const auto size = static_cast<int64_t>(entry.size());
  charge_publish(publish_limiter_, *producer, send.messages, size);
  auto self = shared_from_this();
  // A marker from another cluster is read again once stored (replicated subscriptions).
  Buffer marker = send.marker_type != 0 ? entry : Buffer();
  // Both latencies count from the SEND handled (Pulsar records one value for both).
  const auto received = send.received == std::chrono::steady_clock::time_point{}
                            ? std::chrono::steady_clock::now()
                            : send.received;
  ml_->async_add(BufferChain(std::move(entry)),
                 [self, producer, messages = send.messages, size, top, dedup, replicated,
                  source = send.replicated_from, source_position = send.source_position,
                  marker_type = send.marker_type, marker = std::move(marker), received,
                  done = std::move(done)](Result<Position> p) {
                   if (!p.ok()) {
                     if (dedup && self->dedup_) self->dedup_->failed(producer->name());
                     if (replicated && self->dedup_) self->dedup_->failed_replicated(source);
                     done(std::move(p).status());
                     return;
                   }
                   self->msgs_in_ += messages;
                   self->bytes_in_ += size;
                   ++self->entries_in_;
                   const auto stored = std::chrono::steady_clock::now();
                   const double ms =
                       std::chrono::duration<double, std::milli>(stored - received).count();
                   self->write_latency_.observe(ms);
                   self->metrics_.publish_latency->observe(ms);
                   self->entry_size_.observe(static_cast<double>(size));
                   self->metrics_.in_messages->inc(messages);
                   self->metrics_.in_bytes->inc(size);
                   producer->msgs_in += messages;
                   producer->bytes_in += size;
                   if (dedup && self->dedup_) self->dedup_->persisted(producer->name(), top, *p);
                   if (replicated && self->dedup_) {
                     self->dedup_->persisted_replicated(source, *source_position, *p);
                   }
                   if (marker_type != 0) {
                     self->pass_marker(*p);
                     if (auto parts = protocol::parse_entry(marker); parts.ok()) {
                       self->replicated_subscriptions_->remote_marker(marker_type, source,
                                                                      parts->payload, *p);
                     }
                   } else if (source.empty()) {
                     self->replicated_subscriptions_->data_published();
                   }
                   done(std::optional<Position>(*p));
                 });
}

void PersistentTopic::write_marker(BufferChain entry, std::function<void(Position)> stored) {
  auto self = shared_from_this();
  ml_->async_add(std::move(entry), [self, stored = std::move(stored)](Result<Position> p) {
    if (!p.ok()) {
      self->log_.warn("marker not stored: {}", p.status().to_string());
      return;
    }
    if (stored) stored(*p);
    self->pass_marker(*p);
  });
}

void PersistentTopic::pass_marker(Position p) {
  recent_markers_.push_back(p);
  while (recent_markers_.size() > kRememberedMarkers) recent_markers_.pop_front();
  for (const auto& [name, subscription] : subscriptions_) {
    if (!subscription->durable()) continue;
    auto pass = [sub = subscription, p]() -> Task<void> {
      std::vector<Position> one{p};
      (void)co_await sub->cursor().delete_positions(std::move(one));
      sub->position_moved();
    };
    (void)spawn_in(gate_, executor_, std::move(pass));
  }
}

Task<void> PersistentTopic::pass_markers_behind(std::shared_ptr<Subscription> sub) {
  if (!sub->durable()) co_return;
  const Position mark_delete = sub->cursor().mark_delete_position();
  std::vector<Position> behind;
  for (const Position& p : recent_markers_) {
    if (p > mark_delete) behind.push_back(p);
  }
  if (behind.empty()) co_return;
  (void)co_await sub->cursor().delete_positions(std::move(behind));
  sub->position_moved();
}

std::shared_ptr<Subscription> PersistentTopic::find_subscription(const std::string& name) const {
  auto it = subscriptions_.find(name);
  return it == subscriptions_.end() ? nullptr : it->second;
}

void PersistentTopic::remove_non_durable(const std::string& name) {
  auto it = subscriptions_.find(name);
  if (it == subscriptions_.end() || it->second->durable()) return;
  auto cursor = it->second->cursor_ptr();
  it->second->remove_metrics();
  subscriptions_.erase(it);
  ml_->remove_non_durable_cursor(cursor);
}

void PersistentTopic::remove_abandoned_non_durable(std::chrono::steady_clock::time_point before) {
  std::vector<std::string> names;
  for (const auto& [name, sub] : subscriptions_) {
    if (sub->abandoned(before)) names.push_back(name);
  }
  for (const auto& name : names) {
    log_.with("sub", name).info("dropping the reader's subscription: no consumer came back");
    remove_non_durable(name);
  }
}

Task<Result<std::shared_ptr<Subscription>>> PersistentTopic::subscribe(
    const std::string& name, SubType type, bool durable,
    wire::CommandSubscribe::InitialPosition initial, std::optional<Position> start) {
  auto self = shared_from_this();
  if (name == Deduplication::kCursor || name == compaction::kCursor ||
      name.starts_with(protocol::kReplicatorPrefix)) {
    co_return Status(Error::kReservedName, fmt::format("subscription name {} is reserved", name));
  }
  if (auto existing = find_subscription(name)) co_return existing;
  std::shared_ptr<Subscription> sub;
  if (durable) {
    const auto position = initial == wire::CommandSubscribe::Earliest
                              ? mledger::InitialPosition::kEarliest
                              : mledger::InitialPosition::kLatest;
    auto cursor = co_await ml_->open_cursor(encode_component(name), position);
    if (!cursor.ok()) co_return cursor.status();
    if (auto existing = find_subscription(name)) co_return existing;  // raced
    sub = std::make_shared<Subscription>(*this, name, type, *cursor, true, true);
    subscriptions_[name] = sub;
    co_await pass_markers_behind(sub);
    co_return sub;
  } else {
    Position read_from;
    if (start) {
      if (!start->ledger_id.valid()) {
        read_from = ml_->first_position();
      } else if (start->ledger_id == kLatestLedger) {
        read_from = ml_->next_position(ml_->last_confirmed());
      } else {
        read_from = ml_->next_position(*start);
      }
    } else {
      read_from = initial == wire::CommandSubscribe::Earliest
                      ? ml_->first_position()
                      : ml_->next_position(ml_->last_confirmed());
    }
    auto cursor = ml_->new_non_durable_cursor(read_from, name);
    sub = std::make_shared<Subscription>(*this, name, type, cursor, false, true);
  }
  subscriptions_[name] = sub;
  co_return sub;
}

Task<Status> PersistentTopic::unsubscribe(const std::string& name, bool force) {
  auto self = shared_from_this();
  auto sub = find_subscription(name);
  if (!sub) co_return Status(Error::kSubscriptionNotFound, "subscription not found");
  if (sub->consumers().size() > 1 && !force) {
    co_return Status(Error::kSubscriptionBusy,
                     "Unconnected or shared consumer attempting to unsubscribe");
  }
  sub->close();
  sub->remove_metrics();
  subscriptions_.erase(name);
  if (sub->durable()) co_return co_await ml_->delete_cursor(encode_component(name));
  co_return Status::OK();
}

Task<Result<Position>> PersistentTopic::position_for_time(uint64_t time_ms) {
  auto self = shared_from_this();
  auto older = [time_ms](const mledger::Entry& e) { return published_before(e, time_ms); };
  auto found = co_await ml_->find_newest_matching(ml_->first_position(), older);
  if (!found.ok()) co_return found.status();
  co_return found->has_value() ? ml_->next_position(**found) : ml_->first_position();
}

std::vector<std::string> PersistentTopic::subscription_names() const {
  std::vector<std::string> out;
  for (const auto& [name, sub] : subscriptions_) out.push_back(name);
  return out;
}

bool PersistentTopic::has_clients() const {
  if (!producers_.empty()) return true;
  for (const auto& [name, sub] : subscriptions_) {
    if (!sub->consumers().empty()) return true;
  }
  return false;
}

Task<void> PersistentTopic::close() {
  auto self = shared_from_this();
  disconnect_producers();
  // (A copy: disconnecting a reader's last consumer removes its subscription.)
  auto subscriptions = subscriptions_;
  for (const auto& [name, sub] : subscriptions) {
    sub->close();
    sub->remove_metrics();
  }
  remove_topic_metrics(config_.cluster_name, name_.namespace_name(), name_.to_string());
  Status st = co_await ml_->close();
  if (!st.ok()) log_.warn("closing its managed ledger: {}", st.to_string());
}

void PersistentTopic::refresh_metrics() {
  metrics_.storage_size->set(static_cast<double>(ml_->total_size()));
  int64_t backlog = 0, consumers = 0;
  for (const auto& [name, sub] : subscriptions_) {
    sub->refresh_metrics();
    backlog += sub->cursor().backlog_entries();
    consumers += static_cast<int64_t>(sub->consumers().size());
  }
  metrics_.backlog->set(static_cast<double>(backlog));
  metrics_.logical_size->set(static_cast<double>(ml_->total_size()));
  metrics_.backlog_size->set(static_cast<double>(ml_->estimated_backlog_size()));
  metrics_.producers->set(static_cast<double>(producers_.size()));
  metrics_.consumers->set(static_cast<double>(consumers));
  metrics_.subscriptions->set(static_cast<double>(subscriptions_.size()));
}

void PersistentTopic::update_rates(double seconds) {
  in_rate_.update(msgs_in_, bytes_in_, seconds);
  // Limits relative to the publish rate follow it.
  const auto now = RateLimiter::Clock::now();
  dispatch_limiter_->set_publish_rate(in_rate_.msg_rate(), in_rate_.byte_rate(), now);
  for (auto* list : {&subscription_limiters_, &replicator_limiters_}) {
    for (const auto& weak : *list) {
      if (auto l = weak.lock()) l->set_publish_rate(in_rate_.msg_rate(), in_rate_.byte_rate(), now);
    }
  }
  entry_in_rate_.update(entries_in_, 0, seconds);
  for (auto& [key, p] : producers_.all()) p->in_rate.update(p->msgs_in, p->bytes_in, seconds);
  out_msg_rate_ = out_byte_rate_ = 0;
  double entries_out = 0;
  for (auto& [name, sub] : subscriptions_) {
    sub->update_rates(seconds);
    out_msg_rate_ += sub->out_rate().msg_rate();
    out_byte_rate_ += sub->out_rate().byte_rate();
    entries_out += sub->entry_rate();
  }
  metrics_.rate_in->set(in_rate_.msg_rate());
  metrics_.throughput_in->set(in_rate_.byte_rate());
  metrics_.average_msg_size->set(in_rate_.average_size());
  metrics_.rate_out->set(out_msg_rate_);
  metrics_.throughput_out->set(out_byte_rate_);
  metrics_.storage_write_rate->set(entry_in_rate_.msg_rate());
  metrics_.storage_read_rate->set(entries_out);
  // Bucket gauges: the buckets, then count and sum (Pulsar sums latencies in microseconds).
  auto publish = [](const PeriodBuckets::Period& period,
                    const std::vector<std::shared_ptr<metrics::Gauge>>& gauges, double scale) {
    for (size_t i = 0; i < period.buckets.size(); ++i) {
      gauges[i]->set(static_cast<double>(period.buckets[i]));
    }
    gauges[period.buckets.size()]->set(static_cast<double>(period.count));
    gauges[period.buckets.size() + 1]->set(period.sum * scale);
  };
  publish(write_latency_.roll(), metrics_.write_latency, 1000.0);
  publish(entry_size_.roll(), metrics_.entry_size, 1.0);
}

PersistentTopic::Totals PersistentTopic::totals() const {
  Totals t;
  t.msgs_in = msgs_in_;
  t.bytes_in = bytes_in_;
  t.producers = static_cast<int64_t>(producers_.size());
  add_subscription_totals(t, subscriptions_);
  return t;
}

size_t PersistentTopic::consumer_count() const {
  size_t n = 0;
  for (const auto& [name, sub] : subscriptions_) n += sub->consumers().size();
  return n;
}

std::vector<std::shared_ptr<const Producer>> PersistentTopic::replicator_producers() const {
  std::vector<std::shared_ptr<const Producer>> out;
  for (const auto& [key, p] : producers_.all()) {
    if (p->replicator()) out.push_back(p);
  }
  return out;
}

nlohmann::json PersistentTopic::stats() const {
  nlohmann::json publishers = nlohmann::json::array();
  for (const auto& [key, p] : producers_.all()) {
    if (!p->replicator()) publishers.push_back(p->stats());  // as Pulsar lists them
  }
  nlohmann::json subs = nlohmann::json::object();
  int64_t out = 0, bytes_out = 0;
  for (const auto& [name, sub] : subscriptions_) {
    subs[name] = sub->stats();
    out += sub->msgs_out();
    bytes_out += sub->bytes_out();
  }
  return {{"msgRateIn", in_rate_.msg_rate()},
          {"msgThroughputIn", in_rate_.byte_rate()},
          {"msgRateOut", out_msg_rate_},
          {"msgThroughputOut", out_byte_rate_},
          {"averageMsgSize", in_rate_.average_size()},
          {"msgInCounter", msgs_in_},
          {"bytesInCounter", bytes_in_},
          {"msgOutCounter", out},
          {"bytesOutCounter", bytes_out},
          {"storageSize", ml_->total_size()},
          {"backlogSize", ml_->estimated_backlog_size()},
          {"deduplicationStatus", deduplication_enabled() ? "Enabled" : "Disabled"},
          {"publishers", std::move(publishers)},
          {"subscriptions", std::move(subs)},
          {"replication", replicators_ ? replicators_->stats() : nlohmann::json::object()},
          {"compaction", compaction_->stats_json()}};
}

}  // namespace magnetar::broker
