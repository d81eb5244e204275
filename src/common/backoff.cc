#include "common/backoff.h"

#include <algorithm>

#include "common/status.h"

namespace magnetar {
namespace {

using std::chrono::milliseconds;

uint64_t random_seed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

}  // namespace

Backoff::Backoff(Options options)
    : initial_(options.initial),
      max_(options.max),
      mandatory_stop_(options.mandatory_stop),
      clock_(options.clock ? std::move(options.clock)
                           : Clock([] { return std::chrono::steady_clock::now(); })),
      rng_(options.seed ? *options.seed : random_seed()),
      next_(options.initial) {
  MAGNETAR_ASSERT(initial_.count() > 0 && initial_ <= max_, "Backoff needs 0 < initial <= max");
}

milliseconds Backoff::next() {
  milliseconds current = next_;
  // Doubling written so that it cannot overflow, whatever max_ is.
  next_ = next_ > max_ / 2 ? max_ : next_ * 2;

  if (mandatory_stop_ && !mandatory_stop_made_) {
    auto now = clock_();
    milliseconds elapsed{0};
    if (first_call_) {
      first_call_time_ = now;
    } else {
      elapsed = std::max(milliseconds{0},
                         std::chrono::duration_cast<milliseconds>(now - first_call_time_));
    }
    // "elapsed + current > stop", rearranged so that it cannot overflow either.
    milliseconds remaining = *mandatory_stop_ - elapsed;
    if (current > remaining) {
      current = std::max(initial_, remaining);
      mandatory_stop_made_ = true;
    }
  }
  first_call_ = false;

  // Shorten by up to a tenth so that clients cut off together do not retry in lockstep.
  int64_t c = current.count();
  std::uniform_int_distribution<int64_t> shave(0, c / 10);
  c -= shave(rng_);
  return std::max(initial_, milliseconds{c});
}

void Backoff::reset() {
  next_ = initial_;
  first_call_ = true;
  mandatory_stop_made_ = false;
}

}  // namespace magnetar
