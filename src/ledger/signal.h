#pragma once
// A one-shot event that coroutines on one executor can wait for. Not thread-safe: set() and
// wait() run on the owning executor.

#include <boost/asio/redirect_error.hpp>

#include "common/asio.h"

namespace magnetar::ledger {

class Signal {
 public:
  explicit Signal(Executor executor) : timer_(std::move(executor)) {
    timer_.expires_at(asio::steady_timer::time_point::max());
  }
  void set() {
    set_ = true;
    timer_.cancel();
  }
  bool is_set() const { return set_; }
  Task<void> wait() {
    while (!set_) {
      boost::system::error_code ec;
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

 private:
  asio::steady_timer timer_;
  bool set_ = false;
};

}  // namespace magnetar::ledger
