#include "broker/service/subscription.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "broker/service/errors.h"
#include "broker/service/topic.h"

namespace magnetar::broker {

using mledger::Position;

namespace {

DispatchOptions dispatch_options(const PersistentTopic& topic,
                                 const std::shared_ptr<RateLimiter>& own_limit) {
  DispatchOptions o;
  o.throttle.add(topic.dispatch_limiter());
  o.throttle.add(own_limit);
  o.throttle_batches_as_one = topic.config().dispatch_throttling_on_batch_message_enabled;
  o.read_batch_size = topic.config().managed_ledger_factory.read_batch_size;
  o.max_unacked_messages_per_consumer = topic.config().max_unacked_messages_per_consumer;
  o.partition_index = topic.name().partition_index();
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
      dispatch_limiter_(topic.subscription_limiter()),
      metrics_(subscription_metrics(topic.config().cluster_name, topic.name().namespace_name(),
                                    topic.name().to_string(), name_)) {
  use_dispatcher(type);
}

void Subscription::use_dispatcher(SubType type) {
  auto next = make_dispatcher(type, topic_.executor(), topic_.gate(), dispatch_cursor_,
                              dispatch_options(topic_, dispatch_limiter_), log_);
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
  dispatcher_ = std::move(next);
}

void Subscription::refresh_metrics() {
  metrics_.back_log->set(static_cast<double>(cursor_->backlog_entries()));
  metrics_.unacked->set(static_cast<double>(dispatcher_->unacked_messages()));
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
    co_return co_await cursor_->mark_delete(upto, std::move(properties));
  }
  dispatcher_->acknowledged(positions);
  co_return co_await cursor_->delete_positions(positions);
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
  if (had_consumers) became_empty();
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
          {"isDurable", durable_},
          {"consumers", std::move(consumers)}};
}

}  // namespace magnetar::broker
