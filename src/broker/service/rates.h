#pragma once
// Rates and period buckets as Pulsar's stats show them. Pulsar recomputes its rates once per
// stats period (statsUpdateFrequencyInSecs): a rate is how much a counter grew over the last
// period, per second, and a bucketed distribution (storage write latency, entry size) counts
// the observations of the last period only. Both live on the topic's loop; nothing here is
// shared between threads.

#include <cstdint>
#include <span>
#include <vector>

namespace magnetar::broker {

class RateMeter {
 public:
  // `messages`, `bytes`: the counters' totals now; `seconds`: time since the previous update
  // (nothing changes when it is not positive). A counter that went down (a new owner of the
  // counter started from zero) counts as having grown from zero.
  void update(int64_t messages, int64_t bytes, double seconds);
  double msg_rate() const { return msg_rate_; }
  double byte_rate() const { return byte_rate_; }
  // Bytes per message over the period (0 without messages), Pulsar's averageMsgSize.
  double average_size() const { return msg_rate_ > 0 ? byte_rate_ / msg_rate_ : 0.0; }

 private:
  int64_t last_messages_ = 0, last_bytes_ = 0;
  double msg_rate_ = 0, byte_rate_ = 0;
};

// Pulsar's StatsBuckets: observations of one period counted into fixed buckets (v <= bound),
// the last bucket taking what is above every bound.
class PeriodBuckets {
 public:
  explicit PeriodBuckets(std::span<const double> bounds);

  void observe(double v);

  struct Period {
    std::vector<int64_t> buckets;  // bounds.size() + 1, the last the overflow
    int64_t count = 0;
    double sum = 0;
  };
  // Ends the period: returns what it counted and starts the next one from zero.
  Period roll();

 private:
  std::span<const double> bounds_;
  Period current_;
};

// Pulsar's bucket bounds: storage write latency in milliseconds (0.5 .. 1000) and entry size
// in bytes (128 .. 1232896, Pulsar's "1 MB" bucket).
std::span<const double> write_latency_bounds_ms();
std::span<const double> entry_size_bounds_bytes();

}  // namespace magnetar::broker
