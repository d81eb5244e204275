#include "common/token_bucket.h"

#include <algorithm>
#include <thread>

namespace magnetar {

TokenBucket::TokenBucket(double rate, double burst, Clock::time_point now)
    : rate_(rate), burst_(std::max(1.0, burst)), tokens_(std::max(1.0, burst)), updated_(now) {}

void TokenBucket::refill(Clock::time_point now) {
  if (now <= updated_) return;
  const double elapsed = std::chrono::duration<double>(now - updated_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
  updated_ = now;
}

TokenBucket::Clock::duration TokenBucket::take(double tokens, Clock::time_point now) {
  if (unlimited()) return Clock::duration::zero();
  std::lock_guard lock(mu_);
  refill(now);
  tokens_ -= tokens;
  if (tokens_ >= 0) return Clock::duration::zero();
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(-tokens_ / rate_));
}

double TokenBucket::available(Clock::time_point now) {
  if (unlimited()) return burst_;
  std::lock_guard lock(mu_);
  refill(now);
  return tokens_;
}

TokenBucket::Clock::duration TokenBucket::wait_for_one(Clock::time_point now) {
  if (unlimited()) return Clock::duration::zero();
  std::lock_guard lock(mu_);
  refill(now);
  if (tokens_ >= 1.0) return Clock::duration::zero();
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>((1.0 - tokens_) / rate_));
}

void TokenBucket::acquire() {
  const auto wait = take(Clock::now());
  if (wait > Clock::duration::zero()) std::this_thread::sleep_for(wait);
}

}  // namespace magnetar
