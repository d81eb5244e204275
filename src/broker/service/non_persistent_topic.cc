#include "broker/service/non_persistent_topic.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "broker/service/errors.h"
#include "protocol/replication.h"

namespace magnetar::broker {

NonPersistentTopic::NonPersistentTopic(const BrokerConfig& config, Executor executor,
                                       protocol::TopicName name)
    : config_(config),
      executor_(std::move(executor)),
      name_(std::move(name)),
      log_(log::Logger("broker").with("topic", name_.to_string())),
      metrics_(topic_metrics(config.cluster_name, name_.namespace_name(), name_.to_string())),
      topics_count_(topics_count_gauge(config.cluster_name, name_.namespace_name())) {
  topics_count_->inc();
}

NonPersistentTopic::~NonPersistentTopic() { topics_count_->dec(); }

void NonPersistentTopic::set_policies(TopicPolicies policies) {
  policies_ = std::move(policies);
  publish_limiter_.update(policies_.publish_rate);
}

Result<Topic::Added> NonPersistentTopic::add_producer(const std::shared_ptr<Producer>& p,
                                                      TopicProducers::Decided decided) {
  return producers_.add(p, std::move(decided), policies_.max_producers, name_.to_string());
}

void NonPersistentTopic::remove_producer(uint64_t producer_id, const ProducerSink* owner) {
  producers_.remove(producer_id, owner);
  last_active_ = std::chrono::steady_clock::now();
}

void NonPersistentTopic::publish(const std::shared_ptr<Producer>& producer, Buffer entry,
                                 SendInfo send, std::function<void(Published)> done) {
  const auto size = static_cast<int64_t>(entry.size());
  charge_publish(publish_limiter_, *producer, send.messages, size);
  // Answered first, as Pulsar does: the message is not kept, whatever becomes of it.
  done(std::optional<mledger::Position>(kNonPersistentPosition));
  msgs_in_ += send.messages;
  bytes_in_ += size;
  metrics_.in_messages->inc(send.messages);
  metrics_.in_bytes->inc(size);
  producer->msgs_in += send.messages;
  producer->bytes_in += size;
  if (subscriptions_.empty()) return;
  EntryInfo info = entry_info(entry);
  info.messages = send.messages;
  for (const auto& [name, sub] : subscriptions_) sub->dispatch(entry, info);
}

Result<std::shared_ptr<NonPersistentSubscription>> NonPersistentTopic::subscribe(
    const std::string& name, bool durable) {
  if (name.starts_with(protocol::kReplicatorPrefix)) {
    return Status(Error::kReservedName,
                  "Subscription with reserved subscription name attempted");
  }
  if (auto existing = find_subscription(name)) return existing;
  auto sub =
      std::make_shared<NonPersistentSubscription>(name, durable, name_.partition_index());
  subscriptions_[name] = sub;
  return sub;
}

Status NonPersistentTopic::add_consumer(NonPersistentSubscription& sub,
                                        const std::shared_ptr<Consumer>& consumer,
                                        SubType type) {
  if (const int32_t max = policies_.max_consumers;
      max > 0 && consumer_count() >= static_cast<size_t>(max)) {
    return Status(Error::kConsumerBusy, "Topic reached max consumers limit");
  }
  return sub.add_consumer(consumer, type);
}

void NonPersistentTopic::remove_consumer(NonPersistentSubscription& sub, uint64_t consumer_id,
                                         const ConsumerSink* owner) {
  if (!sub.remove_consumer(consumer_id, owner)) return;
  last_active_ = std::chrono::steady_clock::now();
  if (sub.consumers().empty() && !sub.durable()) (void)unsubscribe(sub.name(), true);
}

Status NonPersistentTopic::unsubscribe(const std::string& name, bool force) {
  auto it = subscriptions_.find(name);
  if (it == subscriptions_.end()) {
    return Status(Error::kSubscriptionNotFound, "subscription not found");
  }
  auto sub = it->second;
  if (sub->consumers().size() > 1 && !force) {
    return Status(Error::kSubscriptionBusy,
                  "Unconnected or shared consumer attempting to unsubscribe");
  }
  msgs_out_gone_ += sub->msgs_out();
  bytes_out_gone_ += sub->bytes_out();
  subscriptions_.erase(it);
  sub->disconnect_all();
  return Status::OK();
}

std::shared_ptr<NonPersistentSubscription> NonPersistentTopic::find_subscription(
    const std::string& name) const {
  auto it = subscriptions_.find(name);
  return it == subscriptions_.end() ? nullptr : it->second;
}

size_t NonPersistentTopic::consumer_count() const {
  size_t n = 0;
  for (const auto& [name, sub] : subscriptions_) n += sub->consumers().size();
  return n;
}

bool NonPersistentTopic::has_clients() const {
  return !producers_.empty() || producers_.waiting() > 0 || consumer_count() > 0;
}

void NonPersistentTopic::close() {
  producers_.disconnect_all(true);
  for (const auto& [name, sub] : subscriptions_) sub->disconnect_all();
  subscriptions_.clear();
  remove_topic_metrics(config_.cluster_name, name_.namespace_name(), name_.to_string());
}

NonPersistentTopic::Totals NonPersistentTopic::totals() const {
  Totals t;
  t.msgs_in = msgs_in_;
  t.bytes_in = bytes_in_;
  t.msgs_out = msgs_out_gone_;
  t.bytes_out = bytes_out_gone_;
  t.producers = static_cast<int64_t>(producers_.size());
  add_subscription_totals(t, subscriptions_);
  return t;
}

void NonPersistentTopic::refresh_metrics() {
  metrics_.producers->set(static_cast<double>(producers_.size()));
  metrics_.consumers->set(static_cast<double>(consumer_count()));
  metrics_.subscriptions->set(static_cast<double>(subscriptions_.size()));
}

void NonPersistentTopic::update_rates(double seconds) {
  in_rate_.update(msgs_in_, bytes_in_, seconds);
  for (const auto& [key, p] : producers_.all()) p->in_rate.update(p->msgs_in, p->bytes_in, seconds);
  out_msg_rate_ = out_byte_rate_ = 0;
  for (const auto& [name, sub] : subscriptions_) {
    sub->update_rates(seconds);
    out_msg_rate_ += sub->out_rate().msg_rate();
    out_byte_rate_ += sub->out_rate().byte_rate();
  }
  metrics_.rate_in->set(in_rate_.msg_rate());
  metrics_.throughput_in->set(in_rate_.byte_rate());
  metrics_.average_msg_size->set(in_rate_.average_size());
  metrics_.rate_out->set(out_msg_rate_);
  metrics_.throughput_out->set(out_byte_rate_);
}

nlohmann::json NonPersistentTopic::stats() const {
  nlohmann::json publishers = nlohmann::json::array();
  for (const auto& [key, p] : producers_.all()) {
    if (p->replicator()) continue;
    auto one = p->stats();
    // Pulsar drops a send only over maxConcurrentNonPersistentMessagePerConnection, which
    // Magnetar does not apply: a publisher's drop rate is 0.
    one["msgDropRate"] = 0.0;
    publishers.push_back(std::move(one));
  }
  nlohmann::json subs = nlohmann::json::object();
  const Totals t = totals();
  for (const auto& [name, sub] : subscriptions_) subs[name] = sub->stats();
  return {{"msgRateIn", in_rate_.msg_rate()},
          {"msgThroughputIn", in_rate_.byte_rate()},
          {"msgRateOut", out_msg_rate_},
          {"msgThroughputOut", out_byte_rate_},
          {"averageMsgSize", in_rate_.average_size()},
          {"msgInCounter", t.msgs_in},
          {"bytesInCounter", t.bytes_in},
          {"msgOutCounter", t.msgs_out},
          {"bytesOutCounter", t.bytes_out},
          {"storageSize", 0},
          {"backlogSize", 0},
          {"msgDropRate", 0.0},
          {"waitingPublishers", producers_.waiting()},
          {"deduplicationStatus", "Disabled"},
          {"publishers", std::move(publishers)},
          {"subscriptions", std::move(subs)},
          {"replication", nlohmann::json::object()}};
}

}  // namespace magnetar::broker
