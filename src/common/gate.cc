#include "common/gate.h"

namespace magnetar {

std::optional<Gate::Holder> Gate::enter() {
  count_.fetch_add(1);
  if (closed_.load()) {
    leave();
    return std::nullopt;
  }
  return Holder(this);
}

void Gate::close() {
  closed_.store(true);
}

void Gate::leave() {
  if (count_.fetch_sub(1) == 1 && closed_.load()) {
    std::lock_guard lock(mu_);
    drained_.notify_all();
  }
}

bool Gate::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return drained_.wait_for(lock, timeout, [this] { return count_.load() == 0; });
}

}  // namespace magnetar
