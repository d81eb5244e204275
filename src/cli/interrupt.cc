#include "cli/interrupt.h"

#include <atomic>
#include <csignal>

namespace magnetar::cli {

namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int) {
  g_stop.store(true, std::memory_order_relaxed);
}

}  // namespace

void request_stop() noexcept {
  g_stop.store(true, std::memory_order_relaxed);
}
bool stop_requested() noexcept {
  return g_stop.load(std::memory_order_relaxed);
}
void clear_stop() noexcept {
  g_stop.store(false, std::memory_order_relaxed);
}

void install_stop_handler() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

}  // namespace magnetar::cli
