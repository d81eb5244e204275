#pragma once
// Wakeup: an auto-reset event for one coroutine waiting on an event loop, built on a
// steady_timer. notify() wakes the wait in progress, or the next one if none is in progress
// (a notification is never lost between a check and the wait that follows it).
//
// Threading: every method runs on the executor given to the constructor (notify() typically
// from metadata store listeners or other coroutines registered with that same executor). Only
// one coroutine may wait at a time.

#include <boost/asio/redirect_error.hpp>
#include <chrono>

#include "common/asio.h"

namespace magnetar {

class Wakeup {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Wakeup(Executor executor) : timer_(std::move(executor)) {}
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  void notify() {
    pending_ = true;
    timer_.cancel();
  }

  // Returns true when woken by notify() (now or since the last wait), false when the
  // deadline passed first. Clock::time_point::max() waits without a deadline.
  Task<bool> wait_until(Clock::time_point deadline) {
    if (!pending_) {
      timer_.expires_at(deadline);
      boost::system::error_code ignored;  // operation_aborted is how notify() wakes us
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    bool woken = pending_;
    pending_ = false;
    co_return woken;
  }

 private:
  asio::steady_timer timer_;
  bool pending_ = false;
};

}  // namespace magnetar
