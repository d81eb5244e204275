#pragma once
// Exponential backoff between retries, with the semantics of Pulsar's client Backoff (Java
// and C++), so that reconnect and lookup timing matches what Pulsar operators expect:
//
// - the first next() returns `initial`; each call doubles the delay, capped at `max`;
// - jitter only shortens a delay, by a random 0-10%, and never below `initial`;
// - with a mandatory stop, the call whose delay would end past `mandatory_stop` after the
//   first next() returns only what remains of it (at least `initial`) and sets
//   mandatory_stop_made(); callers use that as their cue to give up or try something else.
//   Later calls resume the exponential sequence.
//
// Not thread-safe: each retry loop owns its Backoff (on its own strand or thread).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>

namespace magnetar {

class Backoff {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  struct Options {
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{60'000};
    // Time budget from the first next() after construction or reset(); none by default.
    std::optional<std::chrono::milliseconds> mandatory_stop;
    // Seed for the jitter; random when unset. Tests fix it.
    std::optional<uint64_t> seed;
    // Time source for the mandatory stop; steady_clock::now when unset. Tests fake it.
    Clock clock;
  };

  // Asserts 0 < initial <= max.
  explicit Backoff(Options options);

  // The delay before the next attempt.
  std::chrono::milliseconds next();
  // Back to `initial` after a success; re-arms the mandatory stop.
  void reset();

  bool mandatory_stop_made() const noexcept { return mandatory_stop_made_; }

 private:
  const std::chrono::milliseconds initial_;
  const std::chrono::milliseconds max_;
  const std::optional<std::chrono::milliseconds> mandatory_stop_;
  const Clock clock_;
  std::mt19937_64 rng_;

  std::chrono::milliseconds next_;  // the delay the next call starts from, before jitter
  bool first_call_ = true;          // next() not called since construction or reset()
  std::chrono::steady_clock::time_point first_call_time_;
  bool mandatory_stop_made_ = false;
};

}  // namespace magnetar
