#pragma once
// Small synchronisation helpers for the client's event loops and the user threads that
// call into them.
//
// Event: a condition on one event loop. Coroutines wait on it (with a deadline) until
// notify_all(); every waiter re-checks its own condition after waking, so spurious wake-ups
// are harmless. Not thread-safe: used only on its loop.
//
// block_on: runs a coroutine on a loop and waits for its result from a user thread, bounded
// by a timeout so a user call can never hang.

#include <boost/asio/redirect_error.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "common/asio.h"
#include "magnetar/errors.h"

namespace magnetar::client {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadline_after(std::chrono::milliseconds d) {
  if (d.count() <= 0) return Deadline::max();
  return Clock::now() + d;
}

class Event {
 public:
  // True when notified, false at the deadline.
  Task<bool> wait_until(Deadline deadline) {
    auto ex = co_await asio::this_coro::executor;
    auto timer = std::make_shared<asio::steady_timer>(ex);
    timer->expires_at(deadline);
    waiters_.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return ec == asio::error::operation_aborted;
  }
  void notify_all() {
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters) {
      if (auto t = w.lock()) t->cancel();
    }
  }

 private:
  std::vector<std::weak_ptr<asio::steady_timer>> waiters_;
};

// Sleeps until the deadline or until `wake` is notified.
inline Task<void> sleep_until(Event& wake, Deadline deadline) {
  (void)co_await wake.wait_until(deadline);
}

// True when called on the thread running `ex`'s io_context (a blocking wait there would
// block the very loop that must make progress).
inline bool running_in(const Executor& ex) {
  auto& ctx = static_cast<asio::io_context&>(asio::query(ex, asio::execution::context));
  return ctx.get_executor().running_in_this_thread();
}

// Runs `make()` (returning Task<Result<T>> or Task<Status>) on `ex` and waits for it from a
// user thread at most `timeout` (plus a grace period: the coroutine has its own deadlines).
template <typename R, typename F>
R block_on(const Executor& ex, F make, std::chrono::milliseconds timeout) {
  if (running_in(ex)) {
    return R(Status(ClientError::kInvalidConfiguration,
                    "blocking call from a client IO thread (a send callback?): use the async "
                    "variant or another thread"));
  }
  auto promise = std::make_shared<std::promise<R>>();
  auto future = promise->get_future();
  asio::co_spawn(
      ex,
      [promise, make = std::move(make)]() mutable -> Task<void> {
        R r = co_await make();
        promise->set_value(std::move(r));
      },
      [promise](std::exception_ptr e) {
        if (e) {
          try {
            promise->set_value(R(Status(ClientError::kProtocolError, "internal error")));
          } catch (...) {
          }
        }
      });
  if (timeout.count() > 0 &&
      future.wait_for(timeout + std::chrono::seconds(5)) != std::future_status::ready) {
    return R(Status(ClientError::kTimeout, "operation timed out"));
  }
  return future.get();
}

}  // namespace magnetar::client
