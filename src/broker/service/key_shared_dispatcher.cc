// Key_Shared: every key (ordering key, else partition key) goes to one consumer, by the
// Murmur3 hash of the key in [0, 65536). Consumers either ask for fixed ranges (STICKY) or
// share the rest by auto-split (Pulsar's HashRangeAutoSplitStickyKeyConsumerSelector): the
// first consumer owns [0, 65535]; each consumer that joins takes the lower half of the
// largest range, so keys move only from the consumer whose range was split.

#include <fmt/format.h>

#include "broker/service/errors.h"
#include "broker/service/shared_kind_dispatcher.h"
#include "protocol/hash.h"

namespace magnetar::broker {

namespace {

constexpr int kHashSlots = 65536;

class KeySharedDispatcher final : public SharedKindDispatcher {
 public:
  using SharedKindDispatcher::SharedKindDispatcher;
  SubType type() const override { return wire::CommandSubscribe::Key_Shared; }

 protected:
  // Sticky ranges must be valid and not overlap another consumer's.
  Status check_join(const Consumer& consumer) const override {
    for (const auto& [start, end] : consumer.sticky_ranges) {
      if (start < 0 || end >= kHashSlots || start > end) {
        return Status(Error::kConsumerAssignError,
                      fmt::format("invalid hash range [{}, {}]", start, end));
      }
      for (const auto& other : consumers_) {
        for (const auto& [s2, e2] : other->sticky_ranges) {
          if (start <= e2 && s2 <= end) {
            return Status(Error::kConsumerAssignError,
                          fmt::format("hash range [{}, {}] overlaps [{}, {}] of consumer {}", start,
                                      end, s2, e2, other->name()));
          }
        }
      }
    }
    return Status::OK();
  }

  void joined(const std::shared_ptr<Consumer>& consumer) override {
    if (!consumer->sticky_ranges.empty()) return;
    if (ranges_.empty()) {
      ranges_[kHashSlots - 1] = consumer;
      return;
    }
    int best_start = 0, best_end = -1, previous = -1;
    for (const auto& [end, owner] : ranges_) {
      if (end - previous > best_end - best_start + 1) {
        best_start = previous + 1;
        best_end = end;
      }
      previous = end;
    }
    if (best_end <= best_start) return;  // nothing left to split
    ranges_[best_start + (best_end - best_start) / 2] = consumer;
  }

  void left(const std::shared_ptr<Consumer>& consumer) override {
    release_ranges(consumer);
    SharedKindDispatcher::left(consumer);
  }

  std::shared_ptr<Consumer> target_for(const EntryInfo& info) override {
    auto c = consumer_for_slot(protocol::murmur3_32(info.key) % kHashSlots);
    return c && can_receive(*c) ? c : nullptr;
  }

 private:
  std::shared_ptr<Consumer> consumer_for_slot(uint32_t slot) const {
    const int s = static_cast<int>(slot);
    for (const auto& c : consumers_) {
      for (const auto& [start, end] : c->sticky_ranges) {
        if (s >= start && s <= end) return c;
      }
    }
    auto it = ranges_.lower_bound(s);
    return it == ranges_.end() ? nullptr : it->second;
  }

  // Each range of the consumer that left joins the range after it (or before it, at the end).
  void release_ranges(const std::shared_ptr<Consumer>& left) {
    for (auto it = ranges_.begin(); it != ranges_.end();) {
      if (it->second != left) {
        ++it;
        continue;
      }
      auto next = std::next(it);
      if (next != ranges_.end()) {
        it = ranges_.erase(it);
      } else if (it != ranges_.begin()) {
        it->second = std::prev(it)->second;
        ranges_.erase(std::prev(it));
        break;
      } else {
        ranges_.erase(it);
        break;
      }
    }
  }

  // Auto-split ranges: range end (inclusive) -> owner; a range starts after the previous end.
  std::map<int, std::shared_ptr<Consumer>> ranges_;
};

}  // namespace

std::shared_ptr<Dispatcher> make_key_shared_dispatcher(Executor executor, Gate& gate,
                                                       std::shared_ptr<DispatchCursor> cursor,
                                                       DispatchOptions options, log::Logger log) {
  return std::make_shared<KeySharedDispatcher>(std::move(executor), gate, std::move(cursor),
                                               options, std::move(log));
}

}  // namespace magnetar::broker
