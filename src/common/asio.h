#pragma once
// Boost.Asio with C++20 coroutines, as every event-loop component uses it.
//
// Include this instead of Boost.Asio directly: Boost 1.74 needs <utility> and <coroutine>
// before its headers (and, under clang, the macros set in the top-level CMakeLists).

#include <coroutine>
#include <functional>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace magnetar {

namespace asio = boost::asio;
using Executor = asio::any_io_executor;
template <typename T>
using Task = asio::awaitable<T>;

// Bridges a callback-style operation into a coroutine. `start` is called with a completion
// function (std::function<void(T)>) that may be called once, from any thread; the awaiting
// coroutine resumes on its own executor (never on the caller's thread), so completions land
// on the event loop that asked. T must be movable.
//
// Not a coroutine itself, on purpose: GCC 12 mishandles class-type temporaries (such as a
// std::function made from a lambda) passed by value to a coroutine inside a co_await
// expression; Asio's own initiation stores `start` safely.
template <typename T, typename Start>
Task<T> await_callback(Start start) {
  auto initiate = [start = std::move(start)](auto handler) mutable {
    auto executor = asio::get_associated_executor(handler);
    using Handler = decltype(handler);
    auto shared = std::make_shared<Handler>(std::move(handler));
    start(std::function<void(T)>([shared, executor](T value) mutable {
      asio::post(executor, [shared, value = std::move(value)]() mutable {
        (*shared)(std::move(value));
      });
    }));
  };
  return asio::async_initiate<const asio::use_awaitable_t<>, void(T)>(std::move(initiate),
                                                                      asio::use_awaitable);
}

// Runs the coroutine `make()` returns on `executor`; the awaiting coroutine resumes on its
// own executor with the result, always engaged (co_spawn needs a default-constructible
// type, hence the optional): `auto r = co_await run_on<T>(ex, fn); use(std::move(*r));`
// moves work onto the event loop that owns some state. Not a coroutine itself (see
// await_callback). Name the lambda first and pass it with std::move: GCC 12 frees a lambda
// temporary written inside the co_await expression twice.
template <typename T, typename Make>
Task<std::optional<T>> run_on(Executor executor, Make make) {
  auto entry = [make = std::move(make)]() mutable -> Task<std::optional<T>> {
    co_return std::optional<T>(co_await make());
  };
  return asio::co_spawn(std::move(executor), std::move(entry), asio::use_awaitable);
}

// Runs a coroutine to completion on a private io_context: for tests and command-line tools,
// never on an event loop.
template <typename T>
T run_sync(std::function<Task<T>()> make) {
  asio::io_context io;
  std::optional<T> out;
  std::exception_ptr error;
  asio::co_spawn(
      io, [&]() -> Task<void> { out.emplace(co_await make()); },
      [&](std::exception_ptr e) { error = e; });
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

}  // namespace magnetar
