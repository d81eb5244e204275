#include "broker/service/dispatcher.h"

#include <algorithm>
#include <optional>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>

#include "broker/service/errors.h"
#include "common/backoff.h"
#include "mledger/errors.h"

namespace magnetar::broker {

using mledger::Position;

Dispatcher::Dispatcher(Executor executor, Gate& gate, std::shared_ptr<DispatchCursor> cursor,
                       DispatchOptions options, log::Logger log)
    : executor_(std::move(executor)),
      gate_(gate),
      cursor_(std::move(cursor)),
      options_(options),
      log_(std::move(log)) {}

std::shared_ptr<Dispatcher> make_dispatcher(SubType type, Executor executor, Gate& gate,
                                            std::shared_ptr<DispatchCursor> cursor,
                                            DispatchOptions options, log::Logger log) {
  DispatcherFactory make = make_exclusive_dispatcher;
  switch (type) {
    case wire::CommandSubscribe::Exclusive:
      make = make_exclusive_dispatcher;
      break;
    case wire::CommandSubscribe::Failover:
      make = make_failover_dispatcher;
      break;
    case wire::CommandSubscribe::Shared:
      make = make_shared_dispatcher;
      break;
    case wire::CommandSubscribe::Key_Shared:
      make = make_key_shared_dispatcher;
      break;
  }
  return make(std::move(executor), gate, std::move(cursor), options, std::move(log));
}

Status Dispatcher::check_join(const Consumer&) const {
  return Status::OK();
}

Status Dispatcher::add_consumer(const std::shared_ptr<Consumer>& consumer) {
  MAGNETAR_TRY(check_join(*consumer));
  consumers_.push_back(consumer);
  joined(consumer);
  return Status::OK();
}

std::shared_ptr<Consumer> Dispatcher::find_consumer(uint64_t consumer_id,
                                                    const ConsumerSink* owner) const {
  for (const auto& c : consumers_) {
    if (c->id() == consumer_id && c->owner() == owner) return c;
  }
  return nullptr;
}

bool Dispatcher::remove_consumer(uint64_t consumer_id, const ConsumerSink* owner) {
  auto it = std::find_if(consumers_.begin(), consumers_.end(), [&](const auto& c) {
    return c->id() == consumer_id && (c->owner() == owner || !c->sink());
  });
  if (it == consumers_.end()) return false;
  auto consumer = *it;
  consumers_.erase(it);
  left(consumer);
  if (consumers_.empty()) {
    cursor_->cancel_wait();
  } else {
    restart();
  }
  return true;
}

void Dispatcher::flow(const std::shared_ptr<Consumer>& consumer, uint32_t permits) {
  consumer->permits += permits;
  trigger();
}

Status Dispatcher::check_cumulative_ack() const {
  if (allows_cumulative_ack()) return Status::OK();
  return Status(Error::kNotAllowed,
                "cumulative acknowledgement is not allowed on Shared subscriptions");
}

void Dispatcher::acknowledged_upto(Position upto) {
  for (const auto& c : consumers_) {
    for (auto it = c->pending.begin(); it != c->pending.end() && it->first <= upto;) {
      c->unacked_messages -= it->second;
      it = c->pending.erase(it);
    }
  }
  redeliveries_.erase(redeliveries_.begin(), redeliveries_.upper_bound(upto));
  if (delayed_) delayed_->remove_upto(upto);
}

void Dispatcher::acknowledged(const std::vector<Position>& positions) {
  for (const Position& p : positions) {
    for (const auto& c : consumers_) {
      auto it = c->pending.find(p);
      if (it != c->pending.end()) {
        c->unacked_messages -= it->second;
        c->pending.erase(it);
      }
    }
    redeliveries_.erase(p);
    if (delayed_) delayed_->remove(p);
  }
  for (const auto& c : consumers_) {
    const bool was_blocked = c->blocked;
    update_blocked(*c);
    if (was_blocked && !c->blocked) trigger();
  }
}

void Dispatcher::redeliver(const std::shared_ptr<Consumer>& consumer,
                           std::vector<Position> positions) {
  redeliver_pending(consumer, std::move(positions));
  restart();
}

void Dispatcher::forget_sent() {
  to_redeliver_.clear();
  if (delayed_) delayed_->clear();  // read again from the new position, and held again
  for (const auto& c : consumers_) {
    c->pending.clear();
    c->unacked_messages = 0;
  }
}

void Dispatcher::mark_for_redelivery(Position p) {
  to_redeliver_.insert(p);
  ++redeliveries_[p];
}

void Dispatcher::take_over_from(Dispatcher& previous) {
  previous.move_delayed_to(*this);
  to_redeliver_.merge(previous.to_redeliver_);
  redeliveries_.merge(previous.redeliveries_);
  previous.closed_ = true;
  if (previous.dispatching_) {
    previous.successor_ = weak_from_this();
    waiting_for_predecessor_ = true;
  }
}

void Dispatcher::hand_over() {
  auto next = successor_.lock();
  if (!next) return;
  successor_.reset();
  move_delayed_to(*next);
  next->to_redeliver_.merge(to_redeliver_);
  next->redeliveries_.merge(redeliveries_);
  next->waiting_for_predecessor_ = false;
  next->trigger();
}

void Dispatcher::move_delayed_to(Dispatcher& next) {
  if (!delayed_) return;
  for (const Position& p : delayed_->take_all()) next.to_redeliver_.insert(p);
}

int64_t Dispatcher::delayed_messages(Position mark_delete) {
  if (!delayed_) return 0;
  delayed_->remove_upto(mark_delete);
  return static_cast<int64_t>(delayed_->size());
}

bool Dispatcher::held_until_due(Position p, int64_t deliver_at_ms) {
  if (deliver_at_ms < 0 || !delays_delivery()) return false;
  const DelayedDeliveryPolicy policy =
      options_.delayed_delivery ? options_.delayed_delivery() : DelayedDeliveryPolicy{};
  if (!policy.enabled) return false;
  if (!delayed_) {
    auto options = options_.delayed_tracker;
    options.tick_ms = policy.tick_ms;
    // (The tracker is this dispatcher's: its callback runs inside the tracker's calls.)
    delayed_ = std::make_unique<DelayedDeliveryTracker>(
        options, options_.wall_clock,
        [this](std::optional<std::chrono::milliseconds> after) { arm_delay_timer(after); });
  }
  delayed_->set_tick(policy.tick_ms);
  return delayed_->add(p, deliver_at_ms);
}

bool Dispatcher::take_due_or_pause(int max) {
  if (!delayed_) return false;
  if (delayed_->has_due()) {
    for (const Position& p : delayed_->take_due(static_cast<size_t>(std::max(1, max)))) {
      to_redeliver_.insert(p);
    }
    return false;
  }
  return to_redeliver_.empty() && delayed_->should_pause();
}

void Dispatcher::arm_delay_timer(std::optional<std::chrono::milliseconds> after) {
  if (!after) {
    if (delay_timer_) delay_timer_->cancel();
    return;
  }
  if (!delay_timer_) delay_timer_ = std::make_unique<asio::steady_timer>(executor_);
  delay_timer_->expires_after(*after);  // (cancels the wait armed before)
  delay_timer_->async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    if (self->delayed_) self->delayed_->timer_fired();
    self->restart();  // ends a wait for new entries: the due messages go out first
  });
}

int64_t Dispatcher::unacked_messages() const {
  int64_t total = 0;
  for (const auto& c : consumers_) total += c->unacked_messages;
  return total;
}

void Dispatcher::update_blocked(Consumer& c) {
  const int64_t limit = options_.max_unacked_messages_per_consumer;
  if (limit <= 0 || !limits_unacked()) {
    c.blocked = false;
    return;
  }
  if (!c.blocked && c.unacked_messages >= limit) {
    c.blocked = true;
    log_.info("consumer {} blocked: {} unacknowledged messages", c.name(), c.unacked_messages);
  } else if (c.blocked && c.unacked_messages <= limit / 2) {
    c.blocked = false;
  }
}

void Dispatcher::restart() {
  // A dispatch loop waiting for new entries would not see the rewound position or the
  // redeliveries: end its wait; it restarts itself when permits remain.
  cursor_->cancel_wait();
  trigger();
}

void Dispatcher::trigger() {
  if (closed_ || dispatching_ || waiting_for_predecessor_ || consumers_.empty() ||
      available_permits() <= 0) {
    return;
  }
  auto self = shared_from_this();
  dispatching_ = spawn_in(gate_, executor_, [self]() { return self->dispatch_loop(); });
}

void Dispatcher::disconnect_all() {
  auto consumers = consumers_;
  for (const auto& c : consumers) {
    if (auto sink = c->sink()) sink->close_consumer(c->id());
    remove_consumer(c->id(), c->owner());
  }
  consumers_.clear();
}

void Dispatcher::close() {
  closed_ = true;  // no dispatch loop starts again (one waiting ends with the cursor)
  if (delay_timer_) delay_timer_->cancel();
  disconnect_all();
}

void Dispatcher::send_to(const std::shared_ptr<Consumer>& consumer, const mledger::Entry& entry,
                         int messages) {
  auto sink = consumer->sink();
  if (!sink) return;
  auto count = redeliveries_.find(entry.position);
  const bool redelivery = count != redeliveries_.end();
  sink->send_message(consumer->id(), entry.position, consumer->partition(), entry.data,
                     redelivery ? count->second : 0);
  const auto bytes = static_cast<int64_t>(entry.data.size());
  consumer->permits -= messages;
  consumer->msgs_out += messages;
  consumer->bytes_out += bytes;
  if (redelivery) consumer->msgs_redelivered += messages;
  if (on_sent_) on_sent_(messages, bytes);
  consumer->pending[entry.position] = messages;
  consumer->unacked_messages += messages;
  update_blocked(*consumer);
}

Task<std::vector<mledger::Entry>> Dispatcher::read_redeliveries(int wanted) {
  // Oldest first, skipping what was acknowledged meanwhile.
  std::vector<mledger::Entry> entries;
  while (!to_redeliver_.empty() && static_cast<int>(entries.size()) < wanted) {
    const Position p = *to_redeliver_.begin();
    to_redeliver_.erase(to_redeliver_.begin());
    if (cursor_->is_acknowledged(p)) continue;
    auto entry = co_await cursor_->read_at(p);
    if (entry) entries.push_back(std::move(*entry));
  }
  co_return entries;
}

Task<int> Dispatcher::throttled(int wanted) {
  if (options_.throttle.empty()) co_return wanted;
  auto self = shared_from_this();
  std::optional<asio::steady_timer> timer;  // made only when a limit makes it wait
  while (!closed_ && !consumers_.empty()) {
    RateLimiter::Clock::duration wait;
    const int64_t allowed = options_.throttle.allowed(wanted, RateLimiter::Clock::now(), &wait);
    if (allowed > 0) co_return static_cast<int>(allowed);
    if (!timer) timer.emplace(executor_);
    timer->expires_after(std::max(wait, RateLimiter::Clock::duration(std::chrono::milliseconds(1))));
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return 0;
}

Task<void> Dispatcher::dispatch_loop() {
  auto self = shared_from_this();
  Backoff retry(Backoff::Options{options_.read_retry_initial, options_.read_retry_max});
  bool cancelled = false;  // restart() ended a wait: look again from scratch
  while (!consumers_.empty() && !closed_) {
    const int64_t permits = available_permits();
    if (permits <= 0) break;
    const int wanted = co_await throttled(
        static_cast<int>(std::min<int64_t>(permits, options_.read_batch_size)));
    if (wanted <= 0) break;  // closed, or nobody left, while throttled
    if (take_due_or_pause(wanted)) {
      // Held messages fill the lookahead: read nothing more until the first is due (its
      // wake-up restarts dispatch).
      dispatching_ = false;
      hand_over();
      co_return;
    }
    std::vector<mledger::Entry> entries;
    if (!to_redeliver_.empty()) {
      entries = co_await read_redeliveries(wanted);
      if (entries.empty()) continue;
    } else {
      auto read = co_await cursor_->read_or_wait(wanted);
      if (!read.ok()) {
        if (read.status().code() == make_error_code(mledger::Error::kNoMoreEntries)) {
          for (const auto& c : consumers_) {
            if (auto sink = c->sink()) sink->send_reached_end_of_topic(c->id());
          }
          break;
        }
        if (read.status().is(Errc::kCancelled)) {
          cancelled = true;
          break;
        }
        const auto delay = retry.next();
        log_.warn("read failed, retrying in {} ms: {}", delay.count(), read.status().to_string());
        asio::steady_timer wait(executor_, delay);
        boost::system::error_code ec;
        co_await wait.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      entries = std::move(*read);
    }
    retry.reset();
    int handled = 0;  // sent, or needing nothing more now (markers, delayed entries)
    for (const auto& entry : entries) {
      const EntryInfo info = entry_info(entry.data);
      if (info.marker_type != 0) {
        if (on_marker_) on_marker_(entry, info.marker_type);
        ++handled;
        continue;
      }
      if (held_until_due(entry.position, info.deliver_at_ms)) {
        ++handled;  // read on: it goes out again from the tracker when due
        continue;
      }
      auto target = target_for(info);
      if (!target) {
        if (hold(entry)) continue;
        break;
      }
      send_to(target, entry, info.messages);
      if (!options_.throttle.empty()) {
        options_.throttle.charge(options_.throttle_batches_as_one ? 1 : info.messages,
                                 static_cast<int64_t>(entry.data.size()),
                                 RateLimiter::Clock::now());
      }
      ++handled;
    }
    // Nothing could go anywhere (Key_Shared keys whose consumer has no permits): wait for a
    // FLOW or an acknowledgement instead of spinning.
    if (handled == 0) {
      dispatching_ = false;
      hand_over();
      co_return;
    }
  }
  dispatching_ = false;
  hand_over();
  // After a cancelled wait (a consumer left, a rewind, redeliveries), a loop must run again
  // even with nothing to read yet: it waits for new entries (restart()'s own trigger() came
  // while this loop still ran and did nothing).
  if (available_permits() > 0 && !consumers_.empty() &&
      (cancelled || !to_redeliver_.empty() || cursor_->has_more_entries())) {
    trigger();
  }
}

}  // namespace magnetar::broker
