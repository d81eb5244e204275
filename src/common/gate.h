#pragma once
// A task group: counts the coroutines (or other work) of an owner that are still running, so
// that the owner's stop() can refuse new ones and wait for the last to finish before it tears
// down what they use. Work joins with enter() (or spawn_in(), which holds the gate for the
// whole coroutine); close() makes enter() fail from then on; wait() blocks until nothing
// holds the gate.
//
// Thread-safe: enter() and releases are lock-free (one atomic each) and may happen on any
// thread; only a release that finds the gate closed and empty takes the waiter's mutex.
// wait() blocks its thread: call it from a thread that the holders do not need (never from
// one of the event loops their coroutines run on). The gate must outlive every holder.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "common/asio.h"

namespace magnetar {

class Gate {
 public:
  // Holds the gate open until destroyed (movable, not copyable).
  class Holder {
   public:
    Holder() = default;
    Holder(Holder&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Holder& operator=(Holder&& other) noexcept {
      if (this != &other) {
        release();
        gate_ = std::exchange(other.gate_, nullptr);
      }
      return *this;
    }
    Holder(const Holder&) = delete;
    Holder& operator=(const Holder&) = delete;
    ~Holder() { release(); }

   private:
    friend class Gate;
    explicit Holder(Gate* gate) : gate_(gate) {}
    void release() {
      if (gate_ != nullptr) std::exchange(gate_, nullptr)->leave();
    }
    Gate* gate_ = nullptr;
  };

  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // A holder, or nullopt once the gate is closed.
  std::optional<Holder> enter();
  // From now on enter() fails. Idempotent.
  void close();
  bool closed() const { return closed_.load(); }
  // How many holders are alive.
  int64_t count() const { return count_.load(); }
  // Blocks until no holder is left (true) or `timeout` passed (false). Usually after close().
  bool wait(std::chrono::milliseconds timeout);

 private:
  void leave();

  std::atomic<int64_t> count_{0};
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::condition_variable drained_;
};

// Spawns `coroutine` (a callable returning Task<void>) on `executor`, holding `gate` until it
// finishes; spawns nothing and returns false once the gate is closed. The callable is moved
// into the spawned work, so its captures live as long as the coroutine.
template <typename F>
bool spawn_in(Gate& gate, const Executor& executor, F&& coroutine) {
  auto holder = gate.enter();
  if (!holder) return false;
  asio::co_spawn(
      executor,
      [held = std::move(*holder), f = std::forward<F>(coroutine)]() mutable -> Task<void> {
        co_await f();
      },
      asio::detached);
  return true;
}

}  // namespace magnetar
