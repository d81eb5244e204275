#include "broker/topic.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>

#include "broker/broker.h"
#include "broker/connection.h"
#include "mledger/errors.h"
#include "protocol/hash.h"
#include "protocol/frame.h"

namespace magnetar::broker {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

// What dispatch needs from a stored entry's metadata.
struct EntryInfo {
  int messages = 1;
  std::string key;
};

EntryInfo entry_info(const Buffer& data) {
  EntryInfo info;
  auto view = protocol::parse_entry(data);
  if (!view.ok()) return info;
  wire::MessageMetadata md;
  if (!md.ParseFromArray(view->metadata_bytes.data(),
                         static_cast<int>(view->metadata_bytes.size()))) {
    return info;
  }
  if (md.has_num_messages_in_batch()) info.messages = std::max(1, md.num_messages_in_batch());
  info.key = md.has_ordering_key() ? md.ordering_key() : md.partition_key();
  return info;
}


Position to_position(const wire::MessageIdData& id) {
  return Position{static_cast<int64_t>(id.ledgerid()), static_cast<int64_t>(id.entryid())};
}

}  // namespace

bool published_before(const mledger::Entry& entry, uint64_t cutoff_ms) {
  auto view = protocol::parse_entry(entry.data);
  if (!view.ok()) return true;
  wire::MessageMetadata md;
  if (!md.ParseFromArray(view->metadata_bytes.data(),
                         static_cast<int>(view->metadata_bytes.size()))) {
    return true;
  }
  return md.publish_time() < cutoff_ms;
}

ServerFailure to_server_failure(const Status& status) {
  if (status.code() == make_error_code(mledger::Error::kTerminated)) {
    return {wire::TopicTerminatedError, status.message()};
  }
  if (status.is(Errc::kFenced) || status.is(Errc::kUnavailable)) {
    return {wire::ServiceNotReady, status.message()};
  }
  if (status.is(Errc::kNotFound)) return {wire::TopicNotFound, status.message()};
  if (status.is(Errc::kInvalidArgument)) return {wire::MetadataError, status.message()};
  if (status.is(Errc::kNotSupported) || status.is(Errc::kPermissionDenied)) {
    return {wire::NotAllowedError, status.message()};
  }
  return {wire::PersistenceError, status.message()};
}

// ---------------------------------------------------------------------------------------
// Producer and consumer

Producer::Producer(std::shared_ptr<Connection> cnx, uint64_t id, std::string name,
                   wire::ProducerAccessMode mode)
    : cnx_(cnx), id_(id), name_(std::move(name)), mode_(mode), connected_since_ms_(now_ms()) {}

nlohmann::json Producer::stats() const {
  auto cnx = cnx_.lock();
  return {{"producerId", id_},
          {"producerName", name_},
          {"accessMode", wire::ProducerAccessMode_Name(mode_)},
          {"msgInCounter", msgs_in},
          {"bytesInCounter", bytes_in},
          {"address", cnx ? cnx->remote() : ""},
          {"connectedSince", connected_since_ms_}};
}

Consumer::Consumer(std::shared_ptr<Connection> cnx, uint64_t id, std::string name, int priority)
    : cnx_(cnx),
      id_(id),
      name_(std::move(name)),
      priority_(priority),
      connected_since_ms_(now_ms()) {}

nlohmann::json Consumer::stats() const {
  auto cnx = cnx_.lock();
  return {{"consumerName", name_},
          {"availablePermits", permits_},
          {"unackedMessages", unacked_messages_},
          {"msgOutCounter", msgs_out_},
          {"bytesOutCounter", bytes_out_},
          {"priorityLevel", priority_},
          {"address", cnx ? cnx->remote() : ""},
          {"connectedSince", connected_since_ms_}};
}

// ---------------------------------------------------------------------------------------
// Subscription

Subscription::Subscription(PersistentTopic& topic, std::string name, SubType type,
                           std::shared_ptr<mledger::ManagedCursor> cursor, bool durable)
    : topic_(topic),
      name_(std::move(name)),
      type_(type),
      cursor_(std::move(cursor)),
      durable_(durable),
      log_(log::Logger("broker").with("topic", topic.name().to_string()).with("sub", name_)),
      metrics_(subscription_metrics(topic.broker().config().cluster_name,
                                    topic.name().namespace_name(), topic.name().to_string(),
                                    name_)) {}

void Subscription::refresh_metrics() {
  metrics_.back_log->set(static_cast<double>(cursor_->backlog_entries()));
  int64_t unacked = 0;
  for (const auto& c : consumers_) unacked += c->unacked_messages_;
  metrics_.unacked->set(static_cast<double>(unacked));
  metrics_.consumers->set(static_cast<double>(consumers_.size()));
}

void Subscription::remove_metrics() {
  remove_subscription_metrics(topic_.broker().config().cluster_name, topic_.name().namespace_name(),
                              topic_.name().to_string(), name_);
}

std::optional<ServerFailure> Subscription::add_consumer(const std::shared_ptr<Consumer>& consumer,
                                                        SubType type) {
  if (!consumers_.empty() && type != type_) {
    return ServerFailure{wire::ConsumerBusy,
                         fmt::format("subscription {} is of type {}, not {}", name_,
                                     wire::CommandSubscribe::SubType_Name(type_),
                                     wire::CommandSubscribe::SubType_Name(type))};
  }
  if (type == wire::CommandSubscribe::Exclusive && !consumers_.empty()) {
    return ServerFailure{wire::ConsumerBusy, "Exclusive consumer is already connected"};
  }
  if (type == wire::CommandSubscribe::Key_Shared) {
    // Sticky ranges must not overlap another consumer's; auto-split consumers share the rest.
    for (const auto& [start, end] : consumer->sticky_ranges_) {
      if (start < 0 || end > 65535 || start > end) {
        return ServerFailure{wire::ConsumerAssignError,
                             fmt::format("invalid hash range [{}, {}]", start, end)};
      }
      for (const auto& other : consumers_) {
        for (const auto& [s2, e2] : other->sticky_ranges_) {
          if (start <= e2 && s2 <= end) {
            return ServerFailure{wire::ConsumerAssignError,
                                 fmt::format("hash range [{}, {}] overlaps [{}, {}] of consumer {}",
                                             start, end, s2, e2, other->name_)};
          }
        }
      }
    }
  }
  type_ = type;
  consumers_.push_back(consumer);
  cursor_->set_active(true);
  if (type_ == wire::CommandSubscribe::Key_Shared) assign_key_ranges(consumer);
  if (type_ == wire::CommandSubscribe::Failover) notify_active_consumer();
  return std::nullopt;
}

std::shared_ptr<Consumer> Subscription::find_consumer(uint64_t consumer_id,
                                                      const Connection* cnx) const {
  for (const auto& c : consumers_) {
    if (c->id_ == consumer_id && c->connection().get() == cnx) return c;
  }
  return nullptr;
}

void Subscription::remove_consumer(uint64_t consumer_id, const Connection* cnx) {
  auto it = std::find_if(consumers_.begin(), consumers_.end(), [&](const auto& c) {
    return c->id_ == consumer_id && (c->connection().get() == cnx || !c->connection());
  });
  if (it == consumers_.end()) return;
  auto consumer = *it;
  consumers_.erase(it);
  if (type_ == wire::CommandSubscribe::Key_Shared) release_key_ranges(consumer);
  if (type_ == wire::CommandSubscribe::Shared || type_ == wire::CommandSubscribe::Key_Shared) {
    // What it was sent and did not acknowledge goes to the others.
    for (const auto& [pos, n] : consumer->pending_) {
      if (!cursor_->is_acknowledged(pos)) {
        to_redeliver_.insert(pos);
        ++redeliveries_[pos];
      }
    }
  } else {
    // Exclusive/Failover: the next consumer starts after the last acknowledged entry.
    cursor_->seek(topic_.ledger().next_position(cursor_->mark_delete_position()));
  }
  if (consumers_.empty()) {
    cursor_->cancel_wait();
    cursor_->set_active(false);
    if (!durable_) topic_.remove_non_durable(name_);
    return;
  }
  if (type_ == wire::CommandSubscribe::Failover) notify_active_consumer();
  restart_dispatch();
}

std::shared_ptr<Consumer> Subscription::active_consumer() const {
  if (consumers_.empty()) return nullptr;
  if (type_ == wire::CommandSubscribe::Exclusive) return consumers_.front();
  std::vector<std::shared_ptr<Consumer>> sorted = consumers_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a->priority_ != b->priority_ ? a->priority_ < b->priority_ : a->name_ < b->name_;
  });
  const int partition = topic_.name().partition_index();
  const size_t index = partition >= 0 ? static_cast<size_t>(partition) % sorted.size() : 0;
  return sorted[index];
}

// Auto-split (Pulsar's HashRangeAutoSplitStickyKeyConsumerSelector): the first consumer owns
// [0, 65535]; each consumer that joins takes the lower half of the largest range, so keys move
// only from the consumer whose range was split. Sticky consumers own exactly their ranges.
void Subscription::assign_key_ranges(const std::shared_ptr<Consumer>& joined) {
  if (!joined->sticky_ranges_.empty()) return;
  if (key_ranges_.empty()) {
    key_ranges_[65535] = joined;
    return;
  }
  int best_start = 0, best_end = -1, previous = -1;
  for (const auto& [end, owner] : key_ranges_) {
    if (end - previous > best_end - best_start + 1) {
      best_start = previous + 1;
      best_end = end;
    }
    previous = end;
  }
  if (best_end <= best_start) return;  // nothing left to split
  key_ranges_[best_start + (best_end - best_start) / 2] = joined;
}

void Subscription::release_key_ranges(const std::shared_ptr<Consumer>& left) {
  // Each range of the consumer that left joins the range after it (or before it, at the end).
  for (auto it = key_ranges_.begin(); it != key_ranges_.end();) {
    if (it->second != left) {
      ++it;
      continue;
    }
    auto next = std::next(it);
    if (next != key_ranges_.end()) {
      it = key_ranges_.erase(it);
    } else if (it != key_ranges_.begin()) {
      it->second = std::prev(it)->second;
      key_ranges_.erase(std::prev(it));
      break;
    } else {
      key_ranges_.erase(it);
      break;
    }
  }
}

std::shared_ptr<Consumer> Subscription::consumer_for_slot(uint32_t slot) const {
  for (const auto& c : consumers_) {
    for (const auto& [start, end] : c->sticky_ranges_) {
      if (static_cast<int>(slot) >= start && static_cast<int>(slot) <= end) return c;
    }
  }
  auto it = key_ranges_.lower_bound(static_cast<int>(slot));
  return it == key_ranges_.end() ? nullptr : it->second;
}

// maxUnackedMessagesPerConsumer: a Shared/Key_Shared consumer at the limit gets nothing more
// until its unacknowledged messages fall to half of it.
void Subscription::update_blocked(Consumer& c) {
  const int64_t limit = topic_.broker().config().max_unacked_messages_per_consumer;
  if (limit <= 0 || type_ == wire::CommandSubscribe::Exclusive ||
      type_ == wire::CommandSubscribe::Failover) {
    c.blocked_ = false;
    return;
  }
  if (!c.blocked_ && c.unacked_messages_ >= limit) {
    c.blocked_ = true;
    log_.info("consumer {} blocked: {} unacknowledged messages", c.name_, c.unacked_messages_);
  } else if (c.blocked_ && c.unacked_messages_ <= limit / 2) {
    c.blocked_ = false;
  }
}

bool Subscription::can_receive(const Consumer& c) const {
  return c.permits_ > 0 && !c.blocked_;
}

void Subscription::notify_active_consumer() {
  auto active = active_consumer();
  if (active == last_active_) {
    // Unchanged: a consumer that just joined still learns it is on standby.
    const auto& newest = consumers_.back();
    if (newest != active) {
      if (auto cnx = newest->connection()) cnx->send_active_consumer_change(newest->id_, false);
    }
    return;
  }
  if (last_active_) {
    // The new active consumer starts after the last acknowledged entry.
    cursor_->seek(topic_.ledger().next_position(cursor_->mark_delete_position()));
  }
  last_active_ = active;
  for (const auto& c : consumers_) {
    if (auto cnx = c->connection()) cnx->send_active_consumer_change(c->id_, c == active);
  }
}

int64_t Subscription::available_permits() const {
  if (type_ == wire::CommandSubscribe::Exclusive || type_ == wire::CommandSubscribe::Failover) {
    auto active = active_consumer();
    return active ? active->permits_ : 0;
  }
  int64_t total = 0;
  for (const auto& c : consumers_) {
    if (!c->blocked_) total += std::max<int64_t>(0, c->permits_);
  }
  return total;
}

void Subscription::flow(const std::shared_ptr<Consumer>& consumer, uint32_t permits) {
  consumer->permits_ += permits;
  trigger();
}

void Subscription::restart_dispatch() {
  // A dispatch loop waiting for new entries would not see the rewound position or the
  // redeliveries: end its wait; it restarts itself when permits remain.
  cursor_->cancel_wait();
  trigger();
}

void Subscription::trigger() {
  if (closed_ || dispatching_ || consumers_.empty() || available_permits() <= 0) return;
  dispatching_ = true;
  auto self = shared_from_this();
  auto topic = topic_.shared_from_this();  // alive until the loop ends
  asio::co_spawn(
      topic_.executor(), [self, topic]() { return self->dispatch_loop(); }, asio::detached);
}

void Subscription::send_to(const std::shared_ptr<Consumer>& consumer, const mledger::Entry& entry,
                           int messages) {
  auto cnx = consumer->connection();
  if (!cnx) return;
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::MESSAGE);
  auto* msg = cmd.mutable_message();
  msg->set_consumer_id(consumer->id_);
  msg->mutable_message_id()->set_ledgerid(static_cast<uint64_t>(entry.position.ledger_id));
  msg->mutable_message_id()->set_entryid(static_cast<uint64_t>(entry.position.entry_id));
  if (auto it = redeliveries_.find(entry.position); it != redeliveries_.end()) {
    msg->set_redelivery_count(it->second);
  }
  cnx->write(protocol::encode_with_entry(cmd, entry.data));
  consumer->permits_ -= messages;
  ++consumer->msgs_out_;
  consumer->bytes_out_ += static_cast<int64_t>(entry.data.size());
  msgs_out_ += messages;
  bytes_out_ += static_cast<int64_t>(entry.data.size());
  metrics_.out_messages->inc(messages);
  metrics_.out_bytes->inc(static_cast<int64_t>(entry.data.size()));
  consumer->pending_[entry.position] = messages;
  consumer->unacked_messages_ += messages;
  update_blocked(*consumer);
}

Task<void> Subscription::dispatch_loop() {
  auto self = shared_from_this();
  const int batch_size = topic_.broker().config().managed_ledger_factory.read_batch_size;
  int failures = 0;
  bool cancelled = false;  // restart_dispatch() ended a wait: look again from scratch
  while (!consumers_.empty()) {
    const int64_t permits = available_permits();
    if (permits <= 0) break;
    const int wanted = static_cast<int>(std::min<int64_t>(permits, batch_size));
    std::vector<mledger::Entry> entries;
    if (!to_redeliver_.empty()) {
      // Redeliveries first, oldest first, skipping what was acknowledged meanwhile.
      while (!to_redeliver_.empty() && static_cast<int>(entries.size()) < wanted) {
        const Position p = *to_redeliver_.begin();
        to_redeliver_.erase(to_redeliver_.begin());
        if (cursor_->is_acknowledged(p)) continue;
        auto one = co_await topic_.ledger().read(p, 1);
        if (one.ok() && !one->empty() && one->front().position == p) {
          entries.push_back(std::move(one->front()));
        }
      }
      if (entries.empty()) continue;
    } else {
      auto read = co_await cursor_->read_or_wait(wanted);
      if (!read.ok()) {
        if (read.status().code() == make_error_code(mledger::Error::kNoMoreEntries)) {
          for (const auto& c : consumers_) {
            if (auto cnx = c->connection()) cnx->send_reached_end_of_topic(c->id_);
          }
          break;
        }
        if (read.status().is(Errc::kCancelled)) {
          cancelled = true;
          break;
        }
        log_.warn("read failed: {}", read.status().to_string());
        asio::steady_timer backoff(topic_.executor(),
                                   std::chrono::milliseconds(std::min(5000, 100 << failures)));
        ++failures;
        boost::system::error_code ec;
        co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      entries = std::move(*read);
    }
    failures = 0;
    // Distribute.
    int sent = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto& entry = entries[i];
      const EntryInfo info = entry_info(entry.data);
      std::shared_ptr<Consumer> target;
      if (type_ == wire::CommandSubscribe::Exclusive || type_ == wire::CommandSubscribe::Failover) {
        target = active_consumer();
        if (target && target->permits_ <= 0) target = nullptr;
      } else if (type_ == wire::CommandSubscribe::Key_Shared) {
        target = consumer_for_slot(protocol::murmur3_32(info.key) % 65536);
        if (target && !can_receive(*target)) target = nullptr;
      } else {
        // Shared: round robin among the highest-priority consumers with permits.
        int best = INT32_MAX;
        for (const auto& c : consumers_) {
          if (can_receive(*c)) best = std::min(best, c->priority_);
        }
        for (size_t k = 0; k < consumers_.size() && !target; ++k) {
          auto& c = consumers_[(round_robin_ + k) % consumers_.size()];
          if (can_receive(*c) && c->priority_ == best) {
            target = c;
            round_robin_ = (round_robin_ + k + 1) % consumers_.size();
          }
        }
      }
      if (!target) {
        // Nobody can take it now.
        if (type_ == wire::CommandSubscribe::Exclusive ||
            type_ == wire::CommandSubscribe::Failover) {
          cursor_->seek(entry.position);
          break;
        }
        to_redeliver_.insert(entry.position);
        continue;
      }
      send_to(target, entry, info.messages);
      ++sent;
    }
    // Nothing could go anywhere (Key_Shared keys whose consumer has no permits): wait for a
    // FLOW or an acknowledgement instead of spinning.
    if (sent == 0) {
      dispatching_ = false;
      co_return;
    }
  }
  dispatching_ = false;
  // After a cancelled wait (a consumer left, a rewind, redeliveries), a loop must run again
  // even with nothing to read yet: it waits for new entries (restart_dispatch's own
  // trigger() came while this loop still ran and did nothing).
  if (available_permits() > 0 && !consumers_.empty() &&
      (cancelled || !to_redeliver_.empty() || cursor_->has_more_entries())) {
    trigger();
  }
}

Task<std::optional<ServerFailure>> Subscription::acknowledge(std::shared_ptr<Consumer> consumer,
                                                             wire::CommandAck ack) {
  auto self = shared_from_this();
  auto topic = topic_.shared_from_this();  // the subscription may outlive its map entry
  std::vector<Position> positions;
  for (const auto& id : ack.message_id()) {
    // A partial batch acknowledgement (some indexes still unacknowledged) leaves the entry.
    bool partial = false;
    for (int64_t word : id.ack_set()) partial |= word != 0;
    if (partial) continue;
    positions.push_back(to_position(id));
  }
  if (positions.empty()) co_return std::nullopt;
  Status st;
  if (ack.ack_type() == wire::CommandAck::Cumulative) {
    if (type_ == wire::CommandSubscribe::Shared || type_ == wire::CommandSubscribe::Key_Shared) {
      co_return ServerFailure{wire::NotAllowedError,
                              "cumulative acknowledgement is not allowed on Shared subscriptions"};
    }
    const Position upto = *std::max_element(positions.begin(), positions.end());
    for (const auto& c : consumers_) {
      for (auto it = c->pending_.begin(); it != c->pending_.end() && it->first <= upto;) {
        c->unacked_messages_ -= it->second;
        it = c->pending_.erase(it);
      }
    }
    redeliveries_.erase(redeliveries_.begin(), redeliveries_.upper_bound(upto));
    std::map<std::string, int64_t> props;
    for (const auto& kv : ack.properties()) props[kv.key()] = static_cast<int64_t>(kv.value());
    st = co_await cursor_->mark_delete(upto, std::move(props));
  } else {
    for (const Position& p : positions) {
      for (const auto& c : consumers_) {
        auto it = c->pending_.find(p);
        if (it != c->pending_.end()) {
          c->unacked_messages_ -= it->second;
          c->pending_.erase(it);
        }
      }
      redeliveries_.erase(p);
    }
    for (const auto& c : consumers_) {
      const bool was_blocked = c->blocked_;
      update_blocked(*c);
      if (was_blocked && !c->blocked_) trigger();
    }
    st = co_await cursor_->delete_positions(positions);
  }
  if (!st.ok()) co_return to_server_failure(st);
  co_return std::nullopt;
}

void Subscription::redeliver(const std::shared_ptr<Consumer>& consumer,
                             std::vector<Position> positions) {
  if (type_ == wire::CommandSubscribe::Shared || type_ == wire::CommandSubscribe::Key_Shared) {
    if (positions.empty()) {
      for (const auto& [p, n] : consumer->pending_) positions.push_back(p);
    }
    for (const Position& p : positions) {
      auto it = consumer->pending_.find(p);
      if (it == consumer->pending_.end()) continue;
      consumer->unacked_messages_ -= it->second;
      consumer->pending_.erase(it);
      if (!cursor_->is_acknowledged(p)) {
        to_redeliver_.insert(p);
        ++redeliveries_[p];
      }
    }
  } else {
    for (const auto& [p, n] : consumer->pending_) {
      if (!cursor_->is_acknowledged(p)) ++redeliveries_[p];
    }
    consumer->pending_.clear();
    consumer->unacked_messages_ = 0;
    cursor_->seek(topic_.ledger().next_position(cursor_->mark_delete_position()));
  }
  restart_dispatch();
}

Task<std::optional<ServerFailure>> Subscription::reset(Position read_from) {
  auto self = shared_from_this();
  auto topic = topic_.shared_from_this();  // the subscription may outlive its map entry
  to_redeliver_.clear();
  for (const auto& c : consumers_) {
    c->pending_.clear();
    c->unacked_messages_ = 0;
  }
  Status st = co_await cursor_->reset(read_from);
  if (!st.ok()) co_return to_server_failure(st);
  co_return std::nullopt;
}

void Subscription::close() {
  closed_ = true;  // no dispatch loop starts again (one waiting ends with the cursor)
  disconnect_all();
}

void Subscription::disconnect_all() {
  auto consumers = consumers_;
  for (const auto& c : consumers) {
    if (auto cnx = c->connection()) cnx->close_consumer(c->id_);
    remove_consumer(c->id_, c->connection().get());
  }
  // Consumers whose connection is already gone are not matched by remove_consumer.
  consumers_.clear();
}

nlohmann::json Subscription::stats() const {
  nlohmann::json consumers = nlohmann::json::array();
  int64_t unacked = 0;
  for (const auto& c : consumers_) {
    consumers.push_back(c->stats());
    unacked += c->unacked_messages_;
  }
  return {{"type", wire::CommandSubscribe::SubType_Name(type_)},
          {"msgBacklog", cursor_->backlog_entries()},
          {"backlogSize", cursor_->backlog_bytes()},
          {"msgOutCounter", msgs_out_},
          {"bytesOutCounter", bytes_out_},
          {"unackedMessages", unacked},
          {"isDurable", durable_},
          {"consumers", std::move(consumers)}};
}

// ---------------------------------------------------------------------------------------
// Topic

PersistentTopic::PersistentTopic(Broker& broker, Executor executor, protocol::TopicName name,
                                 std::shared_ptr<mledger::ManagedLedger> ml)
    : broker_(broker),
      executor_(std::move(executor)),
      name_(std::move(name)),
      ml_(std::move(ml)),
      log_(log::Logger("broker").with("topic", name_.to_string())),
      metrics_(
          topic_metrics(broker.config().cluster_name, name_.namespace_name(), name_.to_string())) {
  // Durable subscriptions recovered with the managed ledger.
  for (const auto& [cursor_name, cursor] : ml_->cursors()) {
    if (cursor_name == kDedupCursor) continue;
    // The subscription type is set by its first consumer.
    auto sub = std::make_shared<Subscription>(*this, cursor_name, wire::CommandSubscribe::Exclusive,
                                              cursor, true);
    cursor->set_active(false);
    subscriptions_[cursor_name] = sub;
  }
}

PersistentTopic::AddResult PersistentTopic::add_producer(const std::shared_ptr<Producer>& p,
                                                         std::function<void()> promoted,
                                                         ServerFailure* failure) {
  auto fail = [failure](wire::ServerError e, std::string m) {
    *failure = ServerFailure{e, std::move(m)};
    return AddResult::kFailed;
  };
  if (ml_->terminated()) return fail(wire::TopicTerminatedError, "topic is terminated");
  if (backlog_quota_exceeded()) {
    if (policies_.backlog_quota_policy == "producer_exception") {
      return fail(wire::ProducerBlockedQuotaExceededException,
                  "cannot create producer: the topic's backlog quota is exceeded");
    }
    if (policies_.backlog_quota_policy == "producer_request_hold") {
      return fail(wire::ProducerBlockedQuotaExceededError,
                  "cannot create producer: the topic's backlog quota is exceeded");
    }
  }
  for (const auto& [key, existing] : producers_) {
    if (existing->name() == p->name()) {
      return fail(wire::ProducerBusy,
                  fmt::format("producer with name '{}' is already connected", p->name()));
    }
  }
  bool exclusive_exists = !waiting_exclusive_.empty();
  for (const auto& [key, existing] : producers_) {
    exclusive_exists |= existing->access_mode() != wire::Shared;
  }
  switch (p->access_mode()) {
    case wire::Shared:
      if (exclusive_exists) return fail(wire::ProducerBusy, "the topic has an exclusive producer");
      break;
    case wire::Exclusive:
      if (!producers_.empty())
        return fail(wire::ProducerFenced, "the topic already has a producer");
      break;
    case wire::ExclusiveWithFencing: {
      auto others = producers_;
      for (const auto& [key, existing] : others) {
        if (auto cnx = existing->connection()) cnx->close_producer(existing->id());
        producers_.erase(key);
      }
      waiting_exclusive_.clear();
      break;
    }
    case wire::WaitForExclusive:
      if (!producers_.empty() || !waiting_exclusive_.empty()) {
        waiting_exclusive_.push_back(WaitingProducer{p, std::move(promoted)});
        return AddResult::kQueued;
      }
      break;
  }
  producers_[{p->connection().get(), p->id()}] = p;
  return AddResult::kAdded;
}

void PersistentTopic::remove_producer(uint64_t producer_id, const Connection* cnx) {
  producers_.erase({cnx, producer_id});
  std::erase_if(waiting_exclusive_, [&](const WaitingProducer& w) {
    return w.producer->id() == producer_id && w.producer->connection().get() == cnx;
  });
  // The next queued WaitForExclusive producer takes over once the topic has none.
  while (producers_.empty() && !waiting_exclusive_.empty()) {
    auto next = std::move(waiting_exclusive_.front());
    waiting_exclusive_.pop_front();
    if (!next.producer->connection()) continue;
    producers_[{next.producer->connection().get(), next.producer->id()}] = next.producer;
    if (next.promoted) next.promoted();
  }
}

PersistentTopic::Duplicate PersistentTopic::check_duplicate(const std::string& producer,
                                                            int64_t sequence_id, int64_t highest) {
  auto pushed = pushed_.find(producer);
  if (pushed != pushed_.end() && sequence_id <= pushed->second) {
    auto stored = persisted_.find(producer);
    if (stored != persisted_.end() && sequence_id <= stored->second) return Duplicate::kYes;
    return Duplicate::kUnknown;
  }
  pushed_[producer] = std::max(highest, sequence_id);
  return Duplicate::kNo;
}

void PersistentTopic::persisted(const std::string& producer, int64_t highest, Position position) {
  if (!dedup_cursor_) return;
  auto [it, inserted] = persisted_.try_emplace(producer, highest);
  if (!inserted) it->second = std::max(it->second, highest);
  // A snapshot every 1,000 stored entries bounds the replay after a restart
  // (brokerDeduplicationEntriesInterval).
  if (++persisted_since_snapshot_ < 1000) return;
  persisted_since_snapshot_ = 0;
  auto cursor = dedup_cursor_;
  std::map<std::string, int64_t> snapshot = persisted_;
  asio::co_spawn(
      executor_,
      [cursor, position, snapshot]() -> Task<void> {
        (void)co_await cursor->mark_delete(position, snapshot);
      },
      asio::detached);
}

int64_t PersistentTopic::last_sequence_id(const std::string& producer) const {
  auto it = pushed_.find(producer);
  return it == pushed_.end() ? -1 : it->second;
}

Task<Status> PersistentTopic::enable_deduplication() {
  auto self = shared_from_this();
  auto cursor = co_await ml_->open_cursor(kDedupCursor, mledger::InitialPosition::kEarliest);
  if (!cursor.ok()) co_return cursor.status();
  (*cursor)->set_active(false);
  persisted_ = (*cursor)->properties();
  // Replay what was stored after the snapshot.
  Position from = ml_->next_position((*cursor)->mark_delete_position());
  int64_t replayed = 0;
  while (from <= ml_->last_confirmed()) {
    auto entries = co_await ml_->read(from, 1000);
    if (!entries.ok()) co_return entries.status();
    if (entries->empty()) break;
    for (const auto& e : *entries) {
      auto view = protocol::parse_entry(e.data);
      if (!view.ok()) continue;
      wire::MessageMetadata md;
      if (!md.ParseFromArray(view->metadata_bytes.data(),
                             static_cast<int>(view->metadata_bytes.size()))) {
        continue;
      }
      const auto seq = static_cast<int64_t>(md.has_highest_sequence_id() ? md.highest_sequence_id()
                                                                         : md.sequence_id());
      auto [it, inserted] = persisted_.try_emplace(md.producer_name(), seq);
      if (!inserted) it->second = std::max(it->second, seq);
      ++replayed;
    }
    from = ml_->next_position(entries->back().position);
  }
  pushed_ = persisted_;
  dedup_cursor_ = *cursor;
  log_.info("deduplication on: {} producers known, {} entries replayed", persisted_.size(),
            replayed);
  co_return Status::OK();
}

void PersistentTopic::publish(const std::shared_ptr<Producer>& producer, Buffer entry, int messages,
                              std::function<void(Result<Position>)> done) {
  const auto size = static_cast<int64_t>(entry.size());
  auto self = shared_from_this();
  ml_->async_add(BufferChain(std::move(entry)),
                 [self, producer, messages, size, done = std::move(done)](Result<Position> p) {
                   if (p.ok()) {
                     self->msgs_in_ += messages;
                     self->bytes_in_ += size;
                     self->metrics_.in_messages->inc(messages);
                     self->metrics_.in_bytes->inc(size);
                     producer->msgs_in += messages;
                     producer->bytes_in += size;
                   }
                   done(std::move(p));
                 });
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

Task<Result<std::shared_ptr<Subscription>>> PersistentTopic::subscribe(
    const std::string& name, SubType type, bool durable,
    wire::CommandSubscribe::InitialPosition initial, std::optional<Position> start) {
  auto self = shared_from_this();
  if (name == kDedupCursor) {
    co_return Status(Errc::kPermissionDenied,
                     fmt::format("subscription name {} is reserved", name));
  }
  if (auto existing = find_subscription(name)) co_return existing;
  std::shared_ptr<Subscription> sub;
  if (durable) {
    const auto position = initial == wire::CommandSubscribe::Earliest
                              ? mledger::InitialPosition::kEarliest
                              : mledger::InitialPosition::kLatest;
    const std::string cursor_name = encode_component(name);
    auto cursor = co_await ml_->open_cursor(cursor_name, position);
    if (!cursor.ok()) co_return cursor.status();
    if (auto existing = find_subscription(name)) co_return existing;  // raced
    sub = std::make_shared<Subscription>(*this, name, type, *cursor, true);
  } else {
    Position read_from;
    if (start) {
      if (start->ledger_id < 0) {
        read_from = ml_->first_position();
      } else if (start->ledger_id == INT64_MAX) {
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
    sub = std::make_shared<Subscription>(*this, name, type, cursor, false);
  }
  subscriptions_[name] = sub;
  co_return sub;
}

Task<std::optional<ServerFailure>> PersistentTopic::unsubscribe(const std::string& name,
                                                                bool force) {
  auto self = shared_from_this();
  auto sub = find_subscription(name);
  if (!sub) co_return ServerFailure{wire::SubscriptionNotFound, "subscription not found"};
  if (sub->consumers().size() > 1 && !force) {
    co_return ServerFailure{wire::UnknownError,
                            "Unconnected or shared consumer attempting to unsubscribe"};
  }
  sub->close();
  sub->remove_metrics();
  subscriptions_.erase(name);
  if (sub->durable()) {
    Status st = co_await ml_->delete_cursor(encode_component(name));
    if (!st.ok()) co_return to_server_failure(st);
  }
  co_return std::nullopt;
}

bool PersistentTopic::backlog_quota_exceeded() const {
  return ml_->backlog_quota_exceeded(policies_.backlog_quota_bytes);
}

Task<void> PersistentTopic::expire_messages() {
  if (policies_.message_ttl_seconds <= 0) co_return;
  (void)co_await expire_messages(policies_.message_ttl_seconds, {});
}

Task<int> PersistentTopic::expire_messages(int64_t seconds, std::string only) {
  auto self = shared_from_this();
  // Published before now - seconds (nothing at all when that is before the epoch).
  const int64_t now = now_ms();
  const auto cutoff =
      static_cast<uint64_t>(seconds >= now / 1000 ? 0 : now - seconds * 1000);
  auto older = [cutoff](const mledger::Entry& e) { return published_before(e, cutoff); };
  int moved = 0;
  auto subs = subscriptions_;
  for (auto& [name, sub] : subs) {
    if (!only.empty() && name != only) continue;
    auto& cursor = sub->cursor();
    const Position from = ml_->next_position(cursor.mark_delete_position());
    if (from > ml_->last_confirmed()) continue;
    auto found = co_await ml_->find_newest_matching(from, older);
    if (!found.ok() || !found->has_value()) continue;
    Status st = co_await cursor.mark_delete(**found);
    if (st.ok()) {
      ++moved;
      log_.info("subscription {}: expired messages up to {}", name, (*found)->to_string());
    }
  }
  co_return moved;
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

Task<void> PersistentTopic::enforce_backlog_quota() {
  auto self = shared_from_this();
  if (!backlog_quota_exceeded()) co_return;
  const auto& policy = policies_.backlog_quota_policy;
  if (policy == "producer_exception" || policy == "producer_request_hold") {
    // Both disconnect the producers (as Pulsar does); their reconnection is refused while the
    // quota is exceeded — with a retriable error under producer_request_hold, so clients hold
    // their messages and retry, and a final one under producer_exception.
    log_.warn("backlog quota exceeded: disconnecting producers");
    auto producers = producers_;
    for (const auto& [key, p] : producers) {
      if (auto cnx = p->connection()) cnx->close_producer(p->id());
    }
    producers_.clear();
  } else if (policy == "consumer_backlog_eviction") {
    // The slowest durable subscriptions skip their oldest entries until under the quota.
    for (int round = 0; round < 100 && backlog_quota_exceeded(); ++round) {
      std::shared_ptr<Subscription> slowest;
      for (const auto& [name, sub] : subscriptions_) {
        if (!sub->durable()) continue;
        if (!slowest ||
            sub->cursor().mark_delete_position() < slowest->cursor().mark_delete_position()) {
          slowest = sub;
        }
      }
      if (!slowest) break;
      const int64_t entries = std::max<int64_t>(1, ml_->number_of_entries());
      const int64_t average = std::max<int64_t>(1, ml_->total_size() / entries);
      const int64_t over = ml_->estimated_backlog_size() - policies_.backlog_quota_bytes;
      const int64_t skip = std::max<int64_t>(1, over / average + 1);
      Status st = co_await slowest->cursor().skip_entries(skip);
      if (!st.ok()) break;
      log_.warn("backlog quota exceeded: subscription {} skipped {} entries", slowest->name(),
                skip);
    }
  }
}

Task<void> PersistentTopic::close() {
  auto self = shared_from_this();
  auto producers = producers_;
  for (const auto& [key, p] : producers) {
    if (auto cnx = p->connection()) cnx->close_producer(p->id());
  }
  producers_.clear();
  // (A copy: disconnecting a reader's last consumer removes its subscription.)
  auto subscriptions = subscriptions_;
  for (const auto& [name, sub] : subscriptions) {
    sub->close();
    sub->remove_metrics();
  }
  remove_topic_metrics(broker_.config().cluster_name, name_.namespace_name(), name_.to_string());
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
  metrics_.producers->set(static_cast<double>(producers_.size()));
  metrics_.consumers->set(static_cast<double>(consumers));
  metrics_.subscriptions->set(static_cast<double>(subscriptions_.size()));
}

PersistentTopic::Totals PersistentTopic::totals() const {
  Totals t;
  t.msgs_in = msgs_in_;
  t.bytes_in = bytes_in_;
  t.producers = static_cast<int64_t>(producers_.size());
  for (const auto& [name, sub] : subscriptions_) {
    t.msgs_out += sub->msgs_out();
    t.bytes_out += sub->bytes_out();
    t.consumers += static_cast<int64_t>(sub->consumers().size());
  }
  return t;
}

nlohmann::json PersistentTopic::stats() const {
  nlohmann::json publishers = nlohmann::json::array();
  for (const auto& [key, p] : producers_) publishers.push_back(p->stats());
  nlohmann::json subs = nlohmann::json::object();
  int64_t out = 0;
  for (const auto& [name, sub] : subscriptions_) {
    subs[name] = sub->stats();
    out += subs[name]["msgOutCounter"].get<int64_t>();
  }
  return {{"msgInCounter", msgs_in_},
          {"bytesInCounter", bytes_in_},
          {"msgOutCounter", out},
          {"storageSize", ml_->total_size()},
          {"backlogSize", ml_->estimated_backlog_size()},
          {"publishers", std::move(publishers)},
          {"subscriptions", std::move(subs)}};
}

}  // namespace magnetar::broker
