#include "metadata/listeners.h"

#include <vector>

namespace magnetar::metadata {

ListenerRegistry::Added ListenerRegistry::add(Executor executor,
                                              std::function<void(const Notification&)> listener) {
  auto entry = std::make_shared<NotificationEntry>();
  entry->executor = std::move(executor);
  entry->fn = std::move(listener);
  std::lock_guard lock(mu_);
  ListenerId id = next_id_++;
  if (closed_) return Added{id, false};
  bool first = listeners_.empty();
  listeners_.emplace(id, std::move(entry));
  return Added{id, first};
}

ListenerId ListenerRegistry::add_session(Executor executor,
                                         std::function<void(SessionEvent)> listener) {
  auto entry = std::make_shared<SessionEntry>();
  entry->executor = std::move(executor);
  entry->fn = std::move(listener);
  std::lock_guard lock(mu_);
  ListenerId id = next_id_++;
  if (!closed_) session_listeners_.emplace(id, std::move(entry));
  return id;
}

void ListenerRegistry::remove(ListenerId id) {
  std::lock_guard lock(mu_);
  if (auto it = listeners_.find(id); it != listeners_.end()) {
    it->second->alive = false;
    listeners_.erase(it);
  }
  if (auto it = session_listeners_.find(id); it != session_listeners_.end()) {
    it->second->alive = false;
    session_listeners_.erase(it);
  }
}

void ListenerRegistry::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& [id, listener] : listeners_) listener->alive = false;
  for (auto& [id, listener] : session_listeners_) listener->alive = false;
  listeners_.clear();
  session_listeners_.clear();
}

bool ListenerRegistry::has_listeners() const {
  std::lock_guard lock(mu_);
  return !listeners_.empty();
}

void ListenerRegistry::notify(const Notification& notification) const {
  std::vector<std::shared_ptr<NotificationEntry>> targets;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, listener] : listeners_) targets.push_back(listener);
  }
  for (auto& listener : targets) {
    asio::post(listener->executor, [listener, notification] {
      if (listener->alive) listener->fn(notification);
    });
  }
}

void ListenerRegistry::notify_session(SessionEvent event) const {
  std::vector<std::shared_ptr<SessionEntry>> targets;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, listener] : session_listeners_) targets.push_back(listener);
  }
  for (auto& listener : targets) {
    asio::post(listener->executor, [listener, event] {
      if (listener->alive) listener->fn(event);
    });
  }
}

}  // namespace magnetar::metadata
