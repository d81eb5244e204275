#pragma once
// The listeners of one store (notifications and session events), for backends whose events
// arrive on their own threads (ZooKeeper, etcd): each listener runs on the executor it was
// registered with, never after its removal unless the call had already started. Thread-safe.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "common/asio.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata {

class ListenerRegistry {
 public:
  struct Added {
    ListenerId id;
    bool first;  // no notification listener was registered before
  };
  Added add(Executor executor, std::function<void(const Notification&)> listener);
  ListenerId add_session(Executor executor, std::function<void(SessionEvent)> listener);
  // Either kind; unknown ids are ignored.
  void remove(ListenerId id);
  // Removes every listener (a closing store); later registrations are ignored.
  void close();
  bool has_listeners() const;

  // Posts to every listener's executor.
  void notify(const Notification& notification) const;
  void notify_session(SessionEvent event) const;

 private:
  template <typename Arg>
  struct Entry {
    Executor executor;
    std::function<void(Arg)> fn;
    std::atomic<bool> alive{true};
  };
  using NotificationEntry = Entry<const Notification&>;
  using SessionEntry = Entry<SessionEvent>;

  mutable std::mutex mu_;
  bool closed_ = false;                                                    // guarded by mu_
  ListenerId next_id_ = 1;                                                 // guarded by mu_
  std::map<ListenerId, std::shared_ptr<NotificationEntry>> listeners_;     // guarded by mu_
  std::map<ListenerId, std::shared_ptr<SessionEntry>> session_listeners_;  // guarded by mu_
};

}  // namespace magnetar::metadata
