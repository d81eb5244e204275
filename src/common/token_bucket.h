#pragma once
// Rate limiting: a token bucket refilled at `rate` tokens per second holding at most `burst`
// tokens. A caller takes as many tokens as it uses (one per message, or a message's bytes);
// when too few are left they are borrowed (the level goes negative) and the caller is told
// how long to wait, so callers queue up fairly and the long-run rate stays exact even when
// waits overshoot (the overshoot is refunded by the refill, up to `burst`).
//
// magnetar-client and magnetar-perf pace their sends with it; the broker throttles dispatch
// (broker/service/dispatch_throttle.h).
//
// Thread-safe.

#include <chrono>
#include <mutex>

namespace magnetar {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // `rate` <= 0: unlimited (take() always answers zero). The bucket starts full.
  TokenBucket(double rate, double burst, Clock::time_point now = Clock::now());

  // Takes `tokens` at `now`; returns how long to wait before using them (zero if they were
  // there).
  Clock::duration take(double tokens, Clock::time_point now);
  Clock::duration take(Clock::time_point now) { return take(1.0, now); }
  // The tokens there at `now` (negative while borrowed; the burst when unlimited).
  double available(Clock::time_point now);
  // How long from `now` until at least one token is there (zero if one is).
  Clock::duration wait_for_one(Clock::time_point now);
  // take(Clock::now()) then sleeps as long as it says. Blocks the thread: never on an event
  // loop.
  void acquire();

  bool unlimited() const { return rate_ <= 0; }
  double rate() const { return rate_; }
  double burst() const { return burst_; }

 private:
  void refill(Clock::time_point now);  // with mu_ held

  const double rate_;
  const double burst_;
  std::mutex mu_;
  double tokens_;              // guarded by mu_; may be negative (borrowed)
  Clock::time_point updated_;  // guarded by mu_
};

}  // namespace magnetar
