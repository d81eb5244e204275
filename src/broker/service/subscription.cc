#include "broker/service/subscription.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "broker/service/errors.h"
#include "broker/service/replicated_subscriptions.h"
#include "broker/service/topic.h"
#include "protocol/frame.h"
#include "protocol/markers.h"

namespace magnetar::broker {

using mledger::Position;

namespace {

// Pulsar's cursor property of a replicated subscription.
constexpr const char* kReplicatedProperty = "pulsar.replicated.subscription";

DispatchOptions dispatch_options(const PersistentTopic& topic,
                                 const std::shared_ptr<RateLimiter>& own_limit) {
  DispatchOptions o;
  o.throttle.add(topic.dispatch_limiter());
  o.throttle.add(own_limit);
  o.throttle_batches_as_one = topic.config().dispatch_throttling_on_batch_message_enabled;
  o.read_batch_size = topic.config().managed_ledger_factory.read_batch_size;
  o.max_unacked_messages_per_consumer = topic.config().max_unacked_messages_per_consumer;
  o.partition_index = topic.name().partition_index();
  o.delayed_tracker.tick_ms = topic.config().delayed_delivery_tick_time_millis;
  o.delayed_tracker.strict = topic.config().is_delayed_delivery_deliver_at_time_strict;
  o.delayed_tracker.fixed_delay_lookahead =
      topic.config().delayed_delivery_fixed_delay_detection_lookahead;
  return o;
}

}  // namespace

Subscription::Subscription(PersistentTopic& topic, std::string name, SubType type,
                           std::shared_ptr<mledger::ManagedCursor> cursor, bool durable,
                           bool created)
    : topic_(topic),
      name_(std::move(name)),
      cursor_(std::move(cursor)),
      durable_(durable),
      log_(log::Logger("broker").with("topic", topic.name().to_string()).with("sub", name_)),
      dispatch_cursor_(std::make_shared<CompactedDispatchCursor>(topic.ledger_ptr(), cursor_,
                                                                 topic.compaction())),
      created_(created),
      replicated_(durable && cursor_->cursor_properties().count(kReplicatedProperty) > 0),
      dispatch_limiter_(topic.subscription_limiter()),
      metrics_(subscription_metrics(topic.config().cluster_name, topic.name().namespace_name(),
                                    topic.name().to_string(), name_)) {
  use_dispatcher(type);
}

void Subscription::use_dispatcher(SubType type) {
  DispatchOptions options = dispatch_options(topic_, dispatch_limiter_);
  // The topic's policy as it is when an entry asks for a delay (the subscription, and with
  // it the topic, may be gone while a dispatch loop ends).
  options.delayed_delivery = [alive = alive_]() {
    return *alive ? (*alive)->topic_.policies().delayed_delivery : DelayedDeliveryPolicy{};
  };
  auto next = make_dispatcher(type, topic_.executor(), topic_.gate(), dispatch_cursor_,
                              std::move(options), log_);
  if (dispatcher_) next->take_over_from(*dispatcher_);
  // (Copies, not `this`: a dispatch loop may outlive the subscription by a few steps.)
  next->set_on_sent([out = out_, messages_metric = metrics_.out_messages,
                     bytes_metric = metrics_.out_bytes](int messages, int64_t bytes) {
    out->messages += messages;
    out->bytes += bytes;
    ++out->entries;
    messages_metric->inc(messages);
    bytes_metric->inc(bytes);
  });
  // (The first dispatcher is made in the constructor, before any shared_ptr owns this: the
  // callback reaches the subscription through a pointer it clears when it goes.)
  next->set_on_marker([alive = alive_](const mledger::Entry& entry, int32_t type) {
    if (*alive) (*alive)->on_marker(entry, type);
  });
  dispatcher_ = std::move(next);
}

void Subscription::on_marker(const mledger::Entry& entry, int32_t type) {
  if (type == wire::REPLICATED_SUBSCRIPTION_SNAPSHOT && replicated_) {
    auto parts = protocol::parse_entry(entry.data);
    auto snapshot = parts.ok()
                        ? protocol::parse_marker<wire::ReplicatedSubscriptionsSnapshot>(
                              parts->payload)
                        : Result<wire::ReplicatedSubscriptionsSnapshot>(parts.status());
    if (snapshot.ok()) {
      Snapshot s;
      s.local = entry.position;
      for (const auto& c : snapshot->clusters()) {
        const auto& id = c.message_id();
        s.clusters.emplace_back(c.cluster(),
                                Position{LedgerId{static_cast<int64_t>(id.ledger_id())},
                                         EntryId{static_cast<int64_t>(id.entry_id())}});
      }
      cache_snapshot(std::move(s));
    }
  }
  // Never delivered: acknowledged at once, so the backlog passes it.
  auto ack = [self = shared_from_this(), topic = topic_.shared_from_this(),
              p = entry.position]() -> Task<void> {
    std::vector<Position> one{p};
    (void)co_await self->cursor_->delete_positions(std::move(one));
    self->position_moved();
  };
  (void)spawn_in(topic_.gate(), topic_.executor(), std::move(ack));
}

void Subscription::cache_snapshot(Snapshot snapshot) {
  if (!replicated_) return;
  if (!snapshots_.empty() && snapshots_.back().local >= snapshot.local) return;  // known
  snapshots_.push_back(std::move(snapshot));
  const int32_t limit = topic_.config().replicated_subscriptions_snapshot_max_cached;
  const auto max = static_cast<size_t>(std::max(1, limit));
  while (snapshots_.size() > max) snapshots_.pop_front();
}

void Subscription::position_moved() {
  if (replicated_) topic_.replicated_subscriptions().position_moved(*this);
}

Task<Status> Subscription::set_replicated(bool on) {
  auto self = shared_from_this();
  if (!durable_) {
    co_return Status(Error::kNotAllowed, "a non-durable subscription is not replicated");
  }
  replicated_ = on;
  if (!on) snapshots_.clear();
  auto props = cursor_->cursor_properties();
  if (on) {
    props[kReplicatedProperty] = "1";
  } else {
    props.erase(kReplicatedProperty);
  }
  co_return co_await cursor_->set_cursor_properties(std::move(props));
}

std::optional<Subscription::Snapshot> Subscription::take_passed_snapshot() {
  const Position md = cursor_->mark_delete_position();
  std::optional<Snapshot> passed;
  while (!snapshots_.empty() && snapshots_.front().local <= md) {
    passed = std::move(snapshots_.front());
    snapshots_.pop_front();
  }
  return passed;
}

Task<Status> Subscription::apply_remote_position(Position p) {
  auto self = shared_from_this();
  auto topic = topic_.shared_from_this();
  const Position last = topic_.ledger().last_confirmed();
  if (p > last) p = last;
  if (p <= cursor_->mark_delete_position()) co_return Status::OK();
  dispatcher_->acknowledged_upto(p);
  co_return co_await cursor_->mark_delete(p);
}

void Subscription::refresh_metrics() {
  metrics_.back_log->set(static_cast<double>(cursor_->backlog_entries()));
  metrics_.unacked->set(static_cast<double>(dispatcher_->unacked_messages()));
  metrics_.delayed->set(
      static_cast<double>(dispatcher_->delayed_messages(cursor_->mark_delete_position())));
  metrics_.consumers->set(static_cast<double>(consumers().size()));
}

void Subscription::update_rates(double seconds) {
  out_rate_.update(out_->messages, out_->bytes, seconds);
  entry_rate_.update(out_->entries, 0, seconds);
  redeliver_rate_ = 0;
  for (const auto& c : consumers()) {
    c->out_rate.update(c->msgs_out, c->bytes_out, seconds);
    c->redeliver_rate.update(c->msgs_redelivered, 0, seconds);
    redeliver_rate_ += c->redeliver_rate.msg_rate();
  }
  metrics_.msg_rate_out->set(out_rate_.msg_rate());
  metrics_.msg_throughput_out->set(out_rate_.byte_rate());
  metrics_.msg_rate_redeliver->set(redeliver_rate_);
}

void Subscription::remove_metrics() {
  remove_subscription_metrics(topic_.config().cluster_name, topic_.name().namespace_name(),
                              topic_.name().to_string(), name_);
}

Status Subscription::add_consumer(const std::shared_ptr<Consumer>& consumer, SubType type) {
  if (const int32_t max = topic_.policies().max_consumers;
      max > 0 && topic_.consumer_count() >= static_cast<size_t>(max)) {
    return Status(Error::kConsumerBusy, "Topic reached max consumers limit");
  }
  if (type != dispatcher_->type()) {
    if (!consumers().empty()) {
      return Status(Error::kConsumerBusy,
                    fmt::format("subscription {} is of type {}, not {}", name_,
                                wire::CommandSubscribe::SubType_Name(dispatcher_->type()),
                                wire::CommandSubscribe::SubType_Name(type)));
    }
    use_dispatcher(type);
  }
  if (consumers().empty()) {
    // The first consumer decides whether the subscription reads the compacted view.
    const bool earliest = consumer->starts_at_earliest && (!durable_ || created_);
    dispatch_cursor_->set_read_compacted(consumer->read_compacted, earliest);
  }
  MAGNETAR_TRY(dispatcher_->add_consumer(consumer));
  created_ = false;
  cursor_->set_active(true);
  empty_since_.reset();
  return Status::OK();
}

std::shared_ptr<Consumer> Subscription::find_consumer(uint64_t consumer_id,
                                                      const ConsumerSink* owner) const {
  return dispatcher_->find_consumer(consumer_id, owner);
}

void Subscription::remove_consumer(uint64_t consumer_id, const ConsumerSink* owner) {
  if (dispatcher_->remove_consumer(consumer_id, owner) && consumers().empty()) became_empty();
}

void Subscription::became_empty() {
  cursor_->set_active(false);
  if (!durable_) topic_.remove_non_durable(name_);
}

void Subscription::flow(const std::shared_ptr<Consumer>& consumer, uint32_t permits) {
  dispatcher_->flow(consumer, permits);
}

Task<Status> Subscription::acknowledge(bool cumulative, std::vector<Position> positions,
                                       std::map<std::string, int64_t> properties) {
  auto self = shared_from_this();
  auto topic = topic_.shared_from_this();  // the subscription may outlive its map entry
  if (positions.empty()) co_return Status::OK();
  if (cumulative) {
    MAGNETAR_CO_TRY(dispatcher_->check_cumulative_ack());
    const Position upto = *std::max_element(positions.begin(), positions.end());
    dispatcher_->acknowledged_upto(upto);
    Status st = co_await cursor_->mark_delete(upto, std::move(properties));
    position_moved();
    co_return st;
  }
  dispatcher_->acknowledged(positions);
  Status st = co_await cursor_->delete_positions(positions);
  position_moved();
  co_return st;
}

void Subscription::redeliver(const std::shared_ptr<Consumer>& consumer,
                             std::vector<Position> positions) {
  dispatcher_->redeliver(consumer, std::move(positions));
}

Task<Status> Subscription::reset(Position read_from) {
  auto self = shared_from_this();
  auto topic = topic_.shared_from_this();  // the subscription may outlive its map entry
  dispatcher_->forget_sent();
  co_return co_await cursor_->reset(read_from);
}

void Subscription::disconnect_all() {
  const bool had_consumers = !consumers().empty();
  dispatcher_->disconnect_all();
  if (!had_consumers) return;
  cursor_->set_active(false);
  if (!durable_) empty_since_ = std::chrono::steady_clock::now();
}

bool Subscription::abandoned(std::chrono::steady_clock::time_point before) const {
  return !durable_ && empty_since_ && *empty_since_ < before && consumers().empty();
}

void Subscription::close() {
  const bool had_consumers = !consumers().empty();
  dispatcher_->close();
  if (had_consumers) became_empty();
}

nlohmann::json Subscription::stats() const {
  nlohmann::json consumers = nlohmann::json::array();
  for (const auto& c : dispatcher_->consumers()) consumers.push_back(c->stats());
  return {{"type", wire::CommandSubscribe::SubType_Name(dispatcher_->type())},
          {"msgRateOut", out_rate_.msg_rate()},
          {"msgThroughputOut", out_rate_.byte_rate()},
          {"msgRateRedeliver", redeliver_rate_},
          {"msgBacklog", cursor_->backlog_entries()},
          {"backlogSize", cursor_->backlog_bytes()},
          {"msgOutCounter", out_->messages},
          {"bytesOutCounter", out_->bytes},
          {"unackedMessages", dispatcher_->unacked_messages()},
          {"msgDelayed", dispatcher_->delayed_messages(cursor_->mark_delete_position())},
          {"isDurable", durable_},
          {"isReplicated", replicated_},
          {"consumers", std::move(consumers)}};
}

}  // namespace magnetar::broker
