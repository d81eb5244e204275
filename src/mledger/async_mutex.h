#pragma once
// A mutex for coroutines on one executor: lock() suspends until the previous holder calls
// unlock(). Not thread-safe (single event loop by design).

#include <deque>
#include <functional>

#include "common/asio.h"

namespace magnetar::mledger {

class AsyncMutex {
 public:
  Task<void> lock() {
    if (!locked_) {
      locked_ = true;
      co_return;
    }
    auto turn = await_callback<bool>(
        [this](std::function<void(bool)> granted) { waiters_.push_back(std::move(granted)); });
    co_await std::move(turn);  // ownership was handed over by unlock()
  }
  void unlock() {
    if (waiters_.empty()) {
      locked_ = false;
      return;
    }
    auto next = std::move(waiters_.front());
    waiters_.pop_front();
    next(true);
  }
  bool locked() const { return locked_; }

 private:
  bool locked_ = false;
  std::deque<std::function<void(bool)>> waiters_;
};

}  // namespace magnetar::mledger
