#pragma once
// Rate limiting for magnetar-client and magnetar-perf: a token bucket refilled at `rate`
// tokens per second holding at most `burst` tokens. A caller takes one token per message;
// when none is left the token is borrowed (the level goes negative) and the caller is told
// how long to wait, so concurrent callers queue up fairly and the long-run rate stays exact
// even when sleeps overshoot (the overshoot is refunded by the refill, up to `burst`).
//
// Thread-safe.

#include <chrono>
#include <mutex>

namespace magnetar::cli {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // `rate` <= 0: unlimited (take() always answers zero). The bucket starts full.
  TokenBucket(double rate, double burst, Clock::time_point now = Clock::now());

  // Takes one token at `now`; returns how long to wait before using it (zero if one was
  // there).
  Clock::duration take(Clock::time_point now);
  // take(Clock::now()) then sleeps as long as it says.
  void acquire();

  bool unlimited() const { return rate_ <= 0; }

 private:
  const double rate_;
  const double burst_;
  std::mutex mu_;
  double tokens_;              // guarded by mu_; may be negative (borrowed)
  Clock::time_point updated_;  // guarded by mu_
};

}  // namespace magnetar::cli
