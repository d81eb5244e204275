#pragma once
// What Shared and Key_Shared have in common: several consumers receive at once; what one
// was sent and did not acknowledge goes to the others when it leaves or asks for a
// redelivery; an entry nobody can take now waits in the redelivery set; consumers over
// maxUnackedMessagesPerConsumer are skipped; messages wait for their deliver_at_time
// (delayed_delivery.h). Private to the service room's dispatchers.

#include "broker/service/dispatcher.h"

namespace magnetar::broker {

class SharedKindDispatcher : public Dispatcher {
 public:
  using Dispatcher::Dispatcher;

 protected:
  int64_t available_permits() const override {
    int64_t total = 0;
    for (const auto& c : consumers_) {
      if (!c->blocked) total += std::max<int64_t>(0, c->permits);
    }
    return total;
  }
  bool hold(const mledger::Entry& entry) override {
    to_redeliver_.insert(entry.position);
    return true;
  }
  void left(const std::shared_ptr<Consumer>& consumer) override {
    for (const auto& [p, n] : consumer->pending) {
      if (!cursor_->is_acknowledged(p)) mark_for_redelivery(p);
    }
  }
  void redeliver_pending(const std::shared_ptr<Consumer>& consumer,
                         std::vector<mledger::Position> positions) override {
    if (positions.empty()) {
      for (const auto& [p, n] : consumer->pending) positions.push_back(p);
    }
    for (const mledger::Position& p : positions) {
      auto it = consumer->pending.find(p);
      if (it == consumer->pending.end()) continue;
      consumer->unacked_messages -= it->second;
      consumer->pending.erase(it);
      if (!cursor_->is_acknowledged(p)) mark_for_redelivery(p);
    }
  }
  bool allows_cumulative_ack() const override { return false; }
  bool limits_unacked() const override { return true; }
  bool delays_delivery() const override { return true; }
};

}  // namespace magnetar::broker
