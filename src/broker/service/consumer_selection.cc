#include "broker/service/consumer_selection.h"

#include <fmt/format.h>

#include <algorithm>

#include "broker/service/errors.h"
#include "protocol/hash.h"

namespace magnetar::broker {

std::shared_ptr<Consumer> failover_active(const Consumers& consumers, int partition) {
  if (consumers.empty()) return nullptr;
  Consumers sorted = consumers;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a->priority() != b->priority() ? a->priority() < b->priority() : a->name() < b->name();
  });
  const size_t index = partition >= 0 ? static_cast<size_t>(partition) % sorted.size() : 0;
  return sorted[index];
}

bool ActiveConsumerNotifier::notify(const Consumers& consumers,
                                    const std::shared_ptr<Consumer>& active) {
  if (consumers.empty()) return false;
  if (active == last_) {
    // Unchanged: a consumer that just joined still learns it is on standby.
    const auto& newest = consumers.back();
    if (newest != active) {
      if (auto sink = newest->sink()) sink->send_active_consumer_change(newest->id(), false);
    }
    return false;
  }
  last_ = active;
  for (const auto& c : consumers) {
    if (auto sink = c->sink()) sink->send_active_consumer_change(c->id(), c == active);
  }
  return true;
}

Status KeySharedRanges::check_join(const Consumer& consumer, const Consumers& others) {
  for (const auto& [start, end] : consumer.sticky_ranges) {
    if (start < 0 || end >= kHashSlots || start > end) {
      return Status(Error::kConsumerAssignError,
                    fmt::format("invalid hash range [{}, {}]", start, end));
    }
    for (const auto& other : others) {
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

void KeySharedRanges::joined(const std::shared_ptr<Consumer>& consumer) {
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

void KeySharedRanges::left(const std::shared_ptr<Consumer>& consumer) {
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    if (it->second != consumer) {
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

std::shared_ptr<Consumer> KeySharedRanges::consumer_for(const std::string& key,
                                                        const Consumers& consumers) const {
  const int slot = static_cast<int>(protocol::murmur3_32(key) % kHashSlots);
  for (const auto& c : consumers) {
    for (const auto& [start, end] : c->sticky_ranges) {
      if (slot >= start && slot <= end) return c;
    }
  }
  auto it = ranges_.lower_bound(slot);
  return it == ranges_.end() ? nullptr : it->second;
}

}  // namespace magnetar::broker
