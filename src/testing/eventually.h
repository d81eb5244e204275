#pragma once
// Polling for state that another thread or process reaches on its own time (a policy change
// that arrives through a store watch, a broker that registers itself): `done` is asked every
// `interval` until it holds or `limit` passes, and once more at the end.

#include <chrono>
#include <functional>
#include <thread>

namespace magnetar::testing {

inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(10),
                       std::chrono::milliseconds interval = std::chrono::milliseconds(50)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(interval);
  }
  return done();
}

}  // namespace magnetar::testing
