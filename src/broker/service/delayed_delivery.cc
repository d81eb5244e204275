#include "broker/service/delayed_delivery.h"

#include <fmt/format.h>

#include <algorithm>

#include "broker/service/entry_metadata.h"
#include "broker/service/errors.h"

namespace magnetar::broker {

using mledger::Position;

Status check_delivery_delay(const DelayedDeliveryPolicy& policy, const Buffer& entry) {
  if (!policy.enabled || policy.max_delay_ms <= 0) return Status::OK();
  auto md = message_metadata(entry);
  if (!md || !md->has_deliver_at_time()) return Status::OK();
  const int64_t delay = md->deliver_at_time() - static_cast<int64_t>(md->publish_time());
  if (delay <= policy.max_delay_ms) return Status::OK();
  return Status(Error::kNotAllowed, fmt::format("Exceeds max allowed delivery delay of {} milliseconds",
                                                policy.max_delay_ms));
}

DelayedDeliveryTracker::DelayedDeliveryTracker(Options options, Clock clock, ArmTimer arm)
    : options_(options), clock_(std::move(clock)), arm_(std::move(arm)) {}

DelayedDeliveryTracker::~DelayedDeliveryTracker() {
  if (armed_for_ >= 0) arm_(std::nullopt);
}

void DelayedDeliveryTracker::set_tick(int64_t tick_ms) { options_.tick_ms = std::max<int64_t>(0, tick_ms); }

int64_t DelayedDeliveryTracker::cutoff() const {
  return options_.strict ? clock_() : clock_() + options_.tick_ms;
}

bool DelayedDeliveryTracker::add(Position p, int64_t deliver_at_ms) {
  if (deliver_at_ms < 0 || deliver_at_ms <= cutoff()) {
    fixed_delay_ = false;
    return false;
  }
  if (auto it = times_.find(p); it != times_.end()) erase(it);  // read again: the same time
  by_time_[deliver_at_ms].insert(p);
  times_[p] = deliver_at_ms;
  // Delays in read order (within a tick) mean what is read next can only be due later.
  if (deliver_at_ms < highest_time_ - options_.tick_ms) fixed_delay_ = false;
  highest_time_ = std::max(highest_time_, deliver_at_ms);
  update_timer();
  return true;
}

bool DelayedDeliveryTracker::has_due() {
  const bool due = !by_time_.empty() && by_time_.begin()->first <= cutoff();
  if (!due) update_timer();
  return due;
}

std::vector<Position> DelayedDeliveryTracker::take_due(size_t max) {
  std::vector<Position> due;
  const int64_t until = cutoff();
  while (due.size() < max && !by_time_.empty() && by_time_.begin()->first <= until) {
    auto& positions = by_time_.begin()->second;
    while (due.size() < max && !positions.empty()) {
      const Position p = *positions.begin();
      due.push_back(p);
      positions.erase(positions.begin());
      times_.erase(p);
    }
    if (positions.empty()) by_time_.erase(by_time_.begin());
  }
  if (times_.empty()) {
    highest_time_ = 0;
    fixed_delay_ = true;
  }
  std::sort(due.begin(), due.end());
  update_timer();
  return due;
}

std::vector<Position> DelayedDeliveryTracker::take_all() {
  std::vector<Position> all;
  all.reserve(times_.size());
  for (const auto& [p, time] : times_) all.push_back(p);
  clear();
  return all;
}

void DelayedDeliveryTracker::erase(std::map<Position, int64_t>::iterator it) {
  auto bucket = by_time_.find(it->second);
  if (bucket != by_time_.end()) {
    bucket->second.erase(it->first);
    if (bucket->second.empty()) by_time_.erase(bucket);
  }
  times_.erase(it);
}

void DelayedDeliveryTracker::remove(Position p) {
  if (auto it = times_.find(p); it != times_.end()) {
    erase(it);
    update_timer();
  }
}

void DelayedDeliveryTracker::remove_upto(Position upto) {
  if (times_.empty() || times_.begin()->first > upto) return;
  while (!times_.empty() && times_.begin()->first <= upto) erase(times_.begin());
  update_timer();
}

void DelayedDeliveryTracker::clear() {
  by_time_.clear();
  times_.clear();
  highest_time_ = 0;
  fixed_delay_ = true;
  update_timer();
}

bool DelayedDeliveryTracker::should_pause() {
  return options_.fixed_delay_lookahead > 0 && fixed_delay_ &&
         static_cast<int64_t>(times_.size()) >= options_.fixed_delay_lookahead && !has_due();
}

void DelayedDeliveryTracker::timer_fired() {
  last_tick_ = clock_();
  armed_for_ = -1;
}

void DelayedDeliveryTracker::update_timer() {
  if (by_time_.empty()) {
    if (armed_for_ >= 0) {
      armed_for_ = -1;
      arm_(std::nullopt);
    }
    return;
  }
  const int64_t first = by_time_.begin()->first;
  if (first == armed_for_) return;
  const int64_t now = clock_();
  if (first < now) {
    // Due already: the dispatcher takes it when its consumers have room; no wake-up needed.
    if (armed_for_ >= 0) {
      armed_for_ = -1;
      arm_(std::nullopt);
    }
    return;
  }
  // At the first delivery time, but never sooner than a tick after the last wake-up.
  const int64_t delay = std::max(first - now, last_tick_ + options_.tick_ms - now);
  armed_for_ = first;
  arm_(std::chrono::milliseconds(delay));
}

}  // namespace magnetar::broker
