#include "cli/token_bucket.h"

#include <algorithm>
#include <thread>

namespace magnetar::cli {

TokenBucket::TokenBucket(double rate, double burst, Clock::time_point now)
    : rate_(rate), burst_(std::max(1.0, burst)), tokens_(std::max(1.0, burst)), updated_(now) {}

TokenBucket::Clock::duration TokenBucket::take(Clock::time_point now) {
  if (unlimited()) return Clock::duration::zero();
  std::lock_guard lock(mu_);
  if (now > updated_) {
    const double elapsed = std::chrono::duration<double>(now - updated_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
    updated_ = now;
  }
  tokens_ -= 1.0;
  if (tokens_ >= 0) return Clock::duration::zero();
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(-tokens_ / rate_));
}

void TokenBucket::acquire() {
  const auto wait = take(Clock::now());
  if (wait > Clock::duration::zero()) std::this_thread::sleep_for(wait);
}

}  // namespace magnetar::cli
