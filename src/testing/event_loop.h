#pragma once
// An io_context that a gtest body drives by hand: run a coroutine to completion, turn the
// loop until a condition holds, or for a while. Listeners registered with its executor stay
// valid for the loop's lifetime. One thread: the test's.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>

#include <boost/asio/executor_work_guard.hpp>

#include "common/asio.h"

namespace magnetar::testing {

class EventLoop {
 public:
  Executor executor() { return io_.get_executor(); }
  asio::io_context& context() { return io_; }

  // Starts `task` on the loop; the result appears in the slot once it finished.
  template <typename T>
  std::shared_ptr<std::optional<T>> spawn(Task<T> task) {
    auto slot = std::make_shared<std::optional<T>>();
    asio::co_spawn(
        io_,
        [slot, task = std::move(task)]() mutable -> Task<void> {
          slot->emplace(co_await std::move(task));
        },
        [](std::exception_ptr e) {
          if (e) ADD_FAILURE() << "a coroutine threw";
        });
    return slot;
  }

  // Runs `task` to completion (other work on the loop goes on meanwhile); throws if it does
  // not finish within `timeout`.
  template <typename T>
  T await(Task<T> task, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    auto slot = spawn(std::move(task));
    if (!run_until([&] { return slot->has_value(); }, timeout)) {
      throw std::runtime_error("coroutine did not finish in time");
    }
    return std::move(**slot);
  }

  // Turns the loop until `pred` holds or `timeout` passes; returns pred().
  bool run_until(const std::function<bool()>& pred,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred() && std::chrono::steady_clock::now() < deadline) {
      io_.run_one_for(std::chrono::milliseconds(10));
    }
    return pred();
  }

  void run_for(std::chrono::milliseconds d) {
    const auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline) {
      io_.run_one_for(std::chrono::milliseconds(5));
    }
  }

 private:
  asio::io_context io_;
  // Keeps run_one_for() waiting (rather than returning at once) when nothing is queued.
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
};

}  // namespace magnetar::testing
