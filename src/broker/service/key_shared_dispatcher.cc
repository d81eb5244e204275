// Key_Shared: every key goes to one consumer (consumer_selection.h: KeySharedRanges).

#include "broker/service/consumer_selection.h"
#include "broker/service/shared_kind_dispatcher.h"

namespace magnetar::broker {

namespace {

class KeySharedDispatcher final : public SharedKindDispatcher {
 public:
  using SharedKindDispatcher::SharedKindDispatcher;
  SubType type() const override { return wire::CommandSubscribe::Key_Shared; }

 protected:
  Status check_join(const Consumer& consumer) const override {
    return KeySharedRanges::check_join(consumer, consumers_);
  }

  void joined(const std::shared_ptr<Consumer>& consumer) override { ranges_.joined(consumer); }

  void left(const std::shared_ptr<Consumer>& consumer) override {
    ranges_.left(consumer);
    SharedKindDispatcher::left(consumer);
  }

  std::shared_ptr<Consumer> target_for(const EntryInfo& info) override {
    auto c = ranges_.consumer_for(info.key, consumers_);
    return c && can_receive(*c) ? c : nullptr;
  }

 private:
  KeySharedRanges ranges_;
};

}  // namespace

std::shared_ptr<Dispatcher> make_key_shared_dispatcher(Executor executor, Gate& gate,
                                                       std::shared_ptr<DispatchCursor> cursor,
                                                       DispatchOptions options, log::Logger log) {
  return std::make_shared<KeySharedDispatcher>(std::move(executor), gate, std::move(cursor),
                                               options, std::move(log));
}

}  // namespace magnetar::broker
