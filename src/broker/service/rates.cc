#include "broker/service/rates.h"

#include <algorithm>
#include <array>

namespace magnetar::broker {

void RateMeter::update(int64_t messages, int64_t bytes, double seconds) {
  if (seconds <= 0) return;
  const int64_t grown_messages = messages >= last_messages_ ? messages - last_messages_ : messages;
  const int64_t grown_bytes = bytes >= last_bytes_ ? bytes - last_bytes_ : bytes;
  msg_rate_ = static_cast<double>(grown_messages) / seconds;
  byte_rate_ = static_cast<double>(grown_bytes) / seconds;
  last_messages_ = messages;
  last_bytes_ = bytes;
}

PeriodBuckets::PeriodBuckets(std::span<const double> bounds) : bounds_(bounds) {
  current_.buckets.assign(bounds_.size() + 1, 0);
}

void PeriodBuckets::observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  ++current_.buckets[static_cast<size_t>(it - bounds_.begin())];
  ++current_.count;
  current_.sum += v;
}

PeriodBuckets::Period PeriodBuckets::roll() {
  Period done = std::move(current_);
  current_ = Period{};
  current_.buckets.assign(bounds_.size() + 1, 0);
  return done;
}

std::span<const double> write_latency_bounds_ms() {
  static constexpr std::array<double, 9> kBounds = {0.5, 1, 5, 10, 20, 50, 100, 200, 1000};
  return kBounds;
}

std::span<const double> entry_size_bounds_bytes() {
  static constexpr std::array<double, 8> kBounds = {128,  512,    1024,   2048,
                                                    4096, 16384, 102400, 1232896};
  return kBounds;
}

}  // namespace magnetar::broker
