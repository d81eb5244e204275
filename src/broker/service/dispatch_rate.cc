#include "broker/service/dispatch_rate.h"

#include <algorithm>
#include <cmath>

namespace magnetar::broker {

namespace {

// A bucket of `per_period` tokens per `period` seconds (plus `extra` per second), holding
// one period's worth, starting with what `old` held (full when there was none).
std::unique_ptr<TokenBucket> bucket(double per_period, int32_t period, double extra,
                                    TokenBucket* old, TokenBucket::Clock::time_point now) {
  const double seconds = std::max<int32_t>(period, 1);
  const double rate = per_period / seconds + extra;
  const double burst = rate * seconds;
  auto next = std::make_unique<TokenBucket>(rate, burst, now);
  if (old != nullptr) {
    const double held = std::min(old->available(now), next->available(now));
    next->take(next->available(now) - held, now);
  }
  return next;
}

}  // namespace

RateLimiter::RateLimiter(RateLimit limit) : limit_(limit) { rebuild(Clock::now()); }

void RateLimiter::update(const RateLimit& limit, Clock::time_point now) {
  if (limit == limit_) return;
  limit_ = limit;
  rebuild(now);
}

void RateLimiter::set_publish_rate(double messages_per_second, double bytes_per_second,
                                   Clock::time_point now) {
  publish_messages_ = messages_per_second;
  publish_bytes_ = bytes_per_second;
  if (limit_.relative_to_publish_rate) rebuild(now);
}

void RateLimiter::rebuild(Clock::time_point now) {
  const bool relative = limit_.relative_to_publish_rate;
  messages_ = limit_.messages > 0
                  ? bucket(static_cast<double>(limit_.messages), limit_.period_seconds,
                           relative ? publish_messages_ : 0, messages_.get(), now)
                  : nullptr;
  bytes_ = limit_.bytes > 0 ? bucket(static_cast<double>(limit_.bytes), limit_.period_seconds,
                                     relative ? publish_bytes_ : 0, bytes_.get(), now)
                            : nullptr;
}

int64_t RateLimiter::allowed(int64_t wanted, Clock::time_point now) {
  if (bytes_ && bytes_->available(now) < 1) return 0;
  if (!messages_) return wanted;
  const double tokens = messages_->available(now);
  if (tokens < 1) return 0;
  return std::min<int64_t>(wanted, static_cast<int64_t>(std::floor(tokens)));
}

RateLimiter::Clock::duration RateLimiter::wait(Clock::time_point now) {
  Clock::duration longest = Clock::duration::zero();
  for (TokenBucket* b : {messages_.get(), bytes_.get()}) {
    if (b) longest = std::max(longest, b->wait_for_one(now));
  }
  return longest;
}

void RateLimiter::charge(int64_t messages, int64_t bytes, Clock::time_point now) {
  if (messages_) messages_->take(static_cast<double>(messages), now);
  if (bytes_) bytes_->take(static_cast<double>(bytes), now);
}

int64_t Throttle::allowed(int64_t wanted, Clock::time_point now, Clock::duration* wait) const {
  int64_t allowed = wanted;
  *wait = Clock::duration::zero();
  for (const auto& l : limiters_) {
    if (!l->enabled()) continue;
    const int64_t n = l->allowed(wanted, now);
    if (n <= 0) *wait = std::max(*wait, l->wait(now));
    allowed = std::min(allowed, n);
  }
  return allowed;
}

void Throttle::charge(int64_t messages, int64_t bytes, Clock::time_point now) const {
  for (const auto& l : limiters_) {
    if (l->enabled()) l->charge(messages, bytes, now);
  }
}

}  // namespace magnetar::broker
