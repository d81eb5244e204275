// Exclusive and Failover: one consumer at a time receives everything, in order. When it
// leaves, or another becomes active, delivery starts again after the last entry
// acknowledged in order (the cursor rewinds), so an entry reaches the next consumer even if
// the previous one had it and never acknowledged it.

#include <algorithm>

#include "broker/service/consumer_selection.h"
#include "broker/service/dispatcher.h"
#include "broker/service/errors.h"

namespace magnetar::broker {

using mledger::Position;

namespace {

class SingleActiveDispatcher : public Dispatcher {
 public:
  using Dispatcher::Dispatcher;

 protected:
  virtual std::shared_ptr<Consumer> active() const = 0;

  int64_t available_permits() const override {
    auto c = active();
    return c ? c->permits : 0;
  }
  std::shared_ptr<Consumer> target_for(const EntryInfo&) override {
    auto c = active();
    return c && c->permits > 0 ? c : nullptr;
  }
  bool hold(const mledger::Entry& entry) override {
    cursor_->seek(entry.position);  // read again when the consumer has permits
    return false;
  }
  void left(const std::shared_ptr<Consumer>&) override { cursor_->rewind(); }
  void redeliver_pending(const std::shared_ptr<Consumer>& consumer,
                         std::vector<Position>) override {
    for (const auto& [p, n] : consumer->pending) {
      if (!cursor_->is_acknowledged(p)) ++redeliveries_[p];
    }
    consumer->pending.clear();
    consumer->unacked_messages = 0;
    cursor_->rewind();
  }
  bool allows_cumulative_ack() const override { return true; }
};

class ExclusiveDispatcher final : public SingleActiveDispatcher {
 public:
  using SingleActiveDispatcher::SingleActiveDispatcher;
  SubType type() const override { return wire::CommandSubscribe::Exclusive; }

 protected:
  Status check_join(const Consumer&) const override {
    if (consumers_.empty()) return Status::OK();
    return Status(Error::kConsumerBusy, "Exclusive consumer is already connected");
  }
  std::shared_ptr<Consumer> active() const override {
    return consumers_.empty() ? nullptr : consumers_.front();
  }
};

// The active consumer and what consumers hear of it: consumer_selection.h.
class FailoverDispatcher final : public SingleActiveDispatcher {
 public:
  using SingleActiveDispatcher::SingleActiveDispatcher;
  SubType type() const override { return wire::CommandSubscribe::Failover; }

 protected:
  std::shared_ptr<Consumer> active() const override {
    return failover_active(consumers_, options_.partition_index);
  }

  void joined(const std::shared_ptr<Consumer>&) override { notify_active(); }
  void left(const std::shared_ptr<Consumer>& consumer) override {
    SingleActiveDispatcher::left(consumer);
    if (!consumers_.empty()) notify_active();
  }

 private:
  // The new active consumer starts after the last acknowledged entry.
  void notify_active() {
    const bool had_active = notifier_.had_active();
    if (notifier_.notify(consumers_, active()) && had_active) cursor_->rewind();
  }

  ActiveConsumerNotifier notifier_;
};

}  // namespace

std::shared_ptr<Dispatcher> make_exclusive_dispatcher(Executor executor, Gate& gate,
                                                      std::shared_ptr<DispatchCursor> cursor,
                                                      DispatchOptions options, log::Logger log) {
  return std::make_shared<ExclusiveDispatcher>(std::move(executor), gate, std::move(cursor),
                                               options, std::move(log));
}

std::shared_ptr<Dispatcher> make_failover_dispatcher(Executor executor, Gate& gate,
                                                     std::shared_ptr<DispatchCursor> cursor,
                                                     DispatchOptions options, log::Logger log) {
  return std::make_shared<FailoverDispatcher>(std::move(executor), gate, std::move(cursor), options,
                                              std::move(log));
}

}  // namespace magnetar::broker
