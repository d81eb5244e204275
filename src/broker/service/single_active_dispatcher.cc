// Exclusive and Failover: one consumer at a time receives everything, in order. When it
// leaves, or another becomes active, delivery starts again after the last entry
// acknowledged in order (the cursor rewinds), so an entry reaches the next consumer even if
// the previous one had it and never acknowledged it.

#include <algorithm>

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

// The active consumer: by priority level, then name; on a partition, the one at the
// partition's index in that order (so the partitions of a topic spread over the consumers).
// Every consumer hears whether it is active (ACTIVE_CONSUMER_CHANGE).
class FailoverDispatcher final : public SingleActiveDispatcher {
 public:
  using SingleActiveDispatcher::SingleActiveDispatcher;
  SubType type() const override { return wire::CommandSubscribe::Failover; }

 protected:
  std::shared_ptr<Consumer> active() const override {
    if (consumers_.empty()) return nullptr;
    std::vector<std::shared_ptr<Consumer>> sorted = consumers_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a->priority() != b->priority() ? a->priority() < b->priority() : a->name() < b->name();
    });
    const int partition = options_.partition_index;
    const size_t index = partition >= 0 ? static_cast<size_t>(partition) % sorted.size() : 0;
    return sorted[index];
  }
  void joined(const std::shared_ptr<Consumer>&) override { notify_active(); }
  void left(const std::shared_ptr<Consumer>& consumer) override {
    SingleActiveDispatcher::left(consumer);
    if (!consumers_.empty()) notify_active();
  }

 private:
  void notify_active() {
    auto now_active = active();
    if (now_active == last_active_) {
      // Unchanged: a consumer that just joined still learns it is on standby.
      const auto& newest = consumers_.back();
      if (newest != now_active) {
        if (auto sink = newest->sink()) sink->send_active_consumer_change(newest->id(), false);
      }
      return;
    }
    // The new active consumer starts after the last acknowledged entry.
    if (last_active_) cursor_->rewind();
    last_active_ = now_active;
    for (const auto& c : consumers_) {
      if (auto sink = c->sink()) sink->send_active_consumer_change(c->id(), c == now_active);
    }
  }

  std::shared_ptr<Consumer> last_active_;
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
