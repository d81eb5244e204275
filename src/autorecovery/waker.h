#pragma once
// Waker: wakes one coroutine sleeping on an event loop, from store listeners or other
// coroutines of the same loop. A wake() with nobody asleep is kept for the next sleep, so a
// change noticed between a check and the sleep after it is never missed.
//
// Threading: every call on the executor given to the constructor; one sleeper at a time.

#include <boost/asio/redirect_error.hpp>
#include <chrono>

#include "common/asio.h"

namespace magnetar::autorecovery {

class Waker {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Waker(Executor executor) : timer_(std::move(executor)) {}
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  void wake() {
    woken_ = true;
    timer_.cancel();
  }

  // Sleeps until wake() or `deadline`; true when woken.
  Task<bool> sleep_until(Clock::time_point deadline) {
    if (!woken_) {
      timer_.expires_at(deadline);
      boost::system::error_code ignored;  // operation_aborted: wake() cancelled the timer
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    const bool woken = woken_;
    woken_ = false;
    co_return woken;
  }

 private:
  asio::steady_timer timer_;
  bool woken_ = false;
};

}  // namespace magnetar::autorecovery
