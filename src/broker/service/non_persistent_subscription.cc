#include "broker/service/non_persistent_subscription.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "broker/service/errors.h"

namespace magnetar::broker {

NonPersistentSubscription::NonPersistentSubscription(std::string name, bool durable,
                                                     int partition)
    : name_(std::move(name)), durable_(durable), partition_(partition) {}

Status NonPersistentSubscription::add_consumer(const std::shared_ptr<Consumer>& consumer,
                                               SubType type) {
  if (!consumers_.empty() && type_ && *type_ != type) {
    return Status(Error::kConsumerBusy,
                  fmt::format("subscription {} is of type {}, not {}", name_,
                              wire::CommandSubscribe::SubType_Name(*type_),
                              wire::CommandSubscribe::SubType_Name(type)));
  }
  if (consumers_.empty() && type_ != type) {
    type_ = type;
    ranges_ = KeySharedRanges();
    notifier_ = ActiveConsumerNotifier();
  }
  switch (type) {
    case wire::CommandSubscribe::Exclusive:
      if (!consumers_.empty()) {
        return Status(Error::kConsumerBusy, "Exclusive consumer is already connected");
      }
      break;
    case wire::CommandSubscribe::Key_Shared:
      MAGNETAR_TRY(KeySharedRanges::check_join(*consumer, consumers_));
      break;
    default:
      break;
  }
  consumers_.push_back(consumer);
  if (type == wire::CommandSubscribe::Key_Shared) ranges_.joined(consumer);
  if (type == wire::CommandSubscribe::Failover) {
    (void)notifier_.notify(consumers_, failover_active(consumers_, partition_));
  }
  return Status::OK();
}

bool NonPersistentSubscription::remove_consumer(uint64_t consumer_id, const ConsumerSink* owner) {
  auto it = std::find_if(consumers_.begin(), consumers_.end(), [&](const auto& c) {
    return c->id() == consumer_id && c->owner() == owner;
  });
  if (it == consumers_.end()) return false;
  auto consumer = *it;
  consumers_.erase(it);
  if (type_ == wire::CommandSubscribe::Key_Shared) ranges_.left(consumer);
  if (type_ == wire::CommandSubscribe::Failover && !consumers_.empty()) {
    (void)notifier_.notify(consumers_, failover_active(consumers_, partition_));
  }
  return true;
}

std::shared_ptr<Consumer> NonPersistentSubscription::find_consumer(
    uint64_t consumer_id, const ConsumerSink* owner) const {
  for (const auto& c : consumers_) {
    if (c->id() == consumer_id && c->owner() == owner) return c;
  }
  return nullptr;
}

void NonPersistentSubscription::flow(const std::shared_ptr<Consumer>& consumer,
                                     uint32_t permits) {
  consumer->permits += permits;
}

std::shared_ptr<Consumer> NonPersistentSubscription::target_for(const EntryInfo& info) {
  if (consumers_.empty() || !type_) return nullptr;
  std::shared_ptr<Consumer> c;
  switch (*type_) {
    case wire::CommandSubscribe::Exclusive:
      c = consumers_.front();
      break;
    case wire::CommandSubscribe::Failover:
      c = failover_active(consumers_, partition_);
      break;
    case wire::CommandSubscribe::Key_Shared:
      c = ranges_.consumer_for(info.key, consumers_);
      break;
    case wire::CommandSubscribe::Shared:
      // Round robin over the consumers that have permits.
      for (size_t i = 0; i < consumers_.size(); ++i) {
        const auto& candidate = consumers_[(next_ + i) % consumers_.size()];
        if (candidate->permits > 0) {
          next_ = (next_ + i + 1) % consumers_.size();
          return candidate;
        }
      }
      return nullptr;
  }
  return c && c->permits > 0 ? c : nullptr;
}

void NonPersistentSubscription::dispatch(const Buffer& entry, const EntryInfo& info) {
  auto consumer = target_for(info);
  auto sink = consumer ? consumer->sink() : nullptr;
  if (!sink) {
    msgs_dropped_ += info.messages;
    return;
  }
  sink->send_message(consumer->id(), kNonPersistentPosition, consumer->partition(), entry, 0);
  const auto bytes = static_cast<int64_t>(entry.size());
  consumer->permits -= info.messages;
  consumer->msgs_out += info.messages;
  consumer->bytes_out += bytes;
  msgs_out_ += info.messages;
  bytes_out_ += bytes;
}

void NonPersistentSubscription::disconnect_all() {
  auto consumers = std::move(consumers_);
  consumers_.clear();
  ranges_ = KeySharedRanges();
  notifier_ = ActiveConsumerNotifier();
  for (const auto& c : consumers) {
    if (auto sink = c->sink()) sink->close_consumer(c->id());
  }
}

void NonPersistentSubscription::update_rates(double seconds) {
  out_rate_.update(msgs_out_, bytes_out_, seconds);
  drop_rate_.update(msgs_dropped_, 0, seconds);
  for (const auto& c : consumers_) c->out_rate.update(c->msgs_out, c->bytes_out, seconds);
}

nlohmann::json NonPersistentSubscription::stats() const {
  nlohmann::json consumers = nlohmann::json::array();
  for (const auto& c : consumers_) consumers.push_back(c->stats());
  return {{"type", type_ ? wire::CommandSubscribe::SubType_Name(*type_) : "None"},
          {"msgRateOut", out_rate_.msg_rate()},
          {"msgThroughputOut", out_rate_.byte_rate()},
          {"msgRateRedeliver", 0.0},
          {"msgBacklog", 0},
          {"backlogSize", 0},
          {"msgOutCounter", msgs_out_},
          {"bytesOutCounter", bytes_out_},
          {"unackedMessages", 0},
          {"isDurable", durable_},
          {"isReplicated", false},
          {"msgDropRate", drop_rate_.msg_rate()},
          {"msgDropCounter", msgs_dropped_},
          {"consumers", std::move(consumers)}};
}

}  // namespace magnetar::broker
