#pragma once
// Drives coroutines of the metadata store from a gtest body on one io_context that lives as
// long as the test, so listeners registered with its executor stay valid.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>

#include <boost/asio/executor_work_guard.hpp>

#include "common/asio.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata::test {

class Loop {
 public:
  Executor executor() { return io_.get_executor(); }

  // Runs one coroutine to completion (other work on the loop runs meanwhile).
  template <typename T>
  T await(Task<T> task) {
    std::optional<T> out;
    std::exception_ptr error;
    bool done = false;
    asio::co_spawn(
        io_,
        [&]() -> Task<void> { out.emplace(co_await std::move(task)); },
        [&](std::exception_ptr e) {
          error = e;
          done = true;
        });
    while (!done) {
      io_.run_one_for(std::chrono::milliseconds(50));
    }
    if (error) std::rethrow_exception(error);
    return std::move(*out);
  }

  // Runs the loop until `pred` holds or `timeout` passes; returns pred().
  bool run_until(const std::function<bool()>& pred,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred() && std::chrono::steady_clock::now() < deadline) {
      io_.run_one_for(std::chrono::milliseconds(20));
    }
    return pred();
  }

  void run_for(std::chrono::milliseconds d) {
    auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline) {
      io_.run_one_for(std::chrono::milliseconds(10));
    }
  }

 private:
  asio::io_context io_;
  // Keeps run_one_for() blocking (instead of returning at once) while nothing is queued.
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
};

}  // namespace magnetar::metadata::test
