// Shared: round robin among the consumers of the highest priority level (lowest number)
// that can receive.

#include <climits>

#include "broker/service/shared_kind_dispatcher.h"

namespace magnetar::broker {

namespace {

class SharedDispatcher final : public SharedKindDispatcher {
 public:
  using SharedKindDispatcher::SharedKindDispatcher;
  SubType type() const override { return wire::CommandSubscribe::Shared; }

 protected:
  std::shared_ptr<Consumer> target_for(const EntryInfo&) override {
    int best = INT_MAX;
    for (const auto& c : consumers_) {
      if (can_receive(*c)) best = std::min(best, c->priority());
    }
    for (size_t k = 0; k < consumers_.size(); ++k) {
      const size_t i = (next_ + k) % consumers_.size();
      const auto& c = consumers_[i];
      if (can_receive(*c) && c->priority() == best) {
        next_ = (i + 1) % consumers_.size();
        return c;
      }
    }
    return nullptr;
  }

 private:
  size_t next_ = 0;  // where the round robin goes on
};

}  // namespace

std::shared_ptr<Dispatcher> make_shared_dispatcher(Executor executor, Gate& gate,
                                                   std::shared_ptr<DispatchCursor> cursor,
                                                   DispatchOptions options, log::Logger log) {
  return std::make_shared<SharedDispatcher>(std::move(executor), gate, std::move(cursor), options,
                                            std::move(log));
}

}  // namespace magnetar::broker
