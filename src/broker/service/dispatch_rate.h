#pragma once
// Rate limits of a topic's traffic, as Pulsar's DispatchRate, PublishRate and SubscribeRate
// policies set them: dispatch (per topic, shared by its subscriptions; per subscription; per
// replicator), publish (per topic) and subscribe (per consumer).
//
// A dispatcher asks every limiter that applies how much it may read before each read (the
// least allowance wins; none left: it waits until the first is back) and charges what it
// sent after sending, so one read may overshoot: the debt delays the next one (the token
// bucket lends, common/token_bucket.h).
//
// Threading: a limiter lives on its topic's loop.

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/token_bucket.h"

namespace magnetar::broker {

// Pulsar's DispatchRate (and PublishRate, with a period of one second): `messages` and
// `bytes` per `period_seconds`; <= 0 leaves that dimension unlimited. With
// `relative_to_publish_rate`, the topic's publish rate (per second) is added to both.
struct RateLimit {
  int64_t messages = 0;
  int64_t bytes = 0;
  int32_t period_seconds = 1;
  bool relative_to_publish_rate = false;

  // Pulsar's normalize(): a limit with neither rate set is no limit (a level that sets
  // one leaves the choice to the next level).
  bool enabled() const { return messages > 0 || bytes > 0; }
  bool operator==(const RateLimit&) const = default;
};

// Pulsar's SubscribeRate: subscriptions one consumer (host, consumer name) may make per
// `period_seconds`; <= 0: no limit.
struct SubscribeRate {
  int32_t per_consumer = 0;
  int32_t period_seconds = 30;
  bool enabled() const { return per_consumer > 0 && period_seconds > 0; }
  bool operator==(const SubscribeRate&) const = default;
};

class RateLimiter {
 public:
  using Clock = TokenBucket::Clock;

  explicit RateLimiter(RateLimit limit = {});
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // A new limit (or a new publish rate for a relative one): the buckets start again, full
  // up to what the old ones held.
  void update(const RateLimit& limit, Clock::time_point now = Clock::now());
  void set_publish_rate(double messages_per_second, double bytes_per_second,
                        Clock::time_point now = Clock::now());
  const RateLimit& limit() const { return limit_; }
  bool enabled() const { return messages_ || bytes_; }

  // Of `wanted` messages, how many may go now: 0 while either bucket is empty (then
  // wait() says for how long), else at most the message tokens there are.
  int64_t allowed(int64_t wanted, Clock::time_point now);
  Clock::duration wait(Clock::time_point now);
  void charge(int64_t messages, int64_t bytes, Clock::time_point now);

 private:
  void rebuild(Clock::time_point now);

  RateLimit limit_;
  double publish_messages_ = 0, publish_bytes_ = 0;  // per second (relative limits)
  std::unique_ptr<TokenBucket> messages_, bytes_;
};

// The limiters one reader of a topic obeys (e.g. the topic's and its subscription's).
class Throttle {
 public:
  using Clock = RateLimiter::Clock;

  void add(std::shared_ptr<RateLimiter> limiter) { limiters_.push_back(std::move(limiter)); }
  // The least allowance of the limiters (`wanted` without any); 0: wait for `*wait`.
  int64_t allowed(int64_t wanted, Clock::time_point now, Clock::duration* wait) const;
  void charge(int64_t messages, int64_t bytes, Clock::time_point now) const;
  bool empty() const { return limiters_.empty(); }

 private:
  std::vector<std::shared_ptr<RateLimiter>> limiters_;
};

}  // namespace magnetar::broker
