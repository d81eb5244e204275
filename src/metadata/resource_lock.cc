#include "metadata/resource_lock.h"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/wakeup.h"
#include "metadata/errors.h"
#include "metadata/sequential_nodes.h"

namespace magnetar::metadata {
namespace internal {

constexpr std::string_view kLockPrefix = "lock-";

// One acquire() in progress: the predecessor it watches and how to wake it. Lives in the
// acquiring coroutine's frame; registered with the core for that long.
struct LockWaiter {
  explicit LockWaiter(Executor executor) : wakeup(std::move(executor)) {}
  std::string watched;        // full path of the predecessor node, empty when none
  bool session_lost = false;  // kSessionLost arrived during the attempt
  Wakeup wakeup;
};

// What a LockManager and its locks share: the store, the listeners and the registries they
// dispatch to. Held by shared_ptr so that locks may outlive their manager; listeners hold a
// weak_ptr. Used on the manager's executor only.
class LockCore {
 public:
  LockCore(MetadataStore* store, Executor executor)
      : store(store), executor(std::move(executor)), log(log::Logger("metadata.lock")) {}

  ~LockCore() {
    store->remove_listener(listener);
    store->remove_listener(session_listener);
  }

  void register_listeners(const std::shared_ptr<LockCore>& self) {
    std::weak_ptr<LockCore> weak = self;
    listener = store->add_listener(executor, [weak](const Notification& n) {
      if (auto core = weak.lock()) core->on_notification(n);
    });
    session_listener = store->add_session_listener(executor, [weak](SessionEvent e) {
      if (auto core = weak.lock()) core->on_session_event(e);
    });
  }

  std::vector<std::string> own_node_list() const {
    return std::vector<std::string>(own_nodes.begin(), own_nodes.end());
  }

  MetadataStore* const store;
  const Executor executor;
  const log::Logger log;
  ListenerId listener = 0;
  ListenerId session_listener = 0;

  std::unordered_map<std::string, ResourceLock*> locks;  // node path -> held lock
  std::unordered_set<LockWaiter*> waiters;
  // Nodes this manager created and still uses (held or being acquired): never orphans.
  std::unordered_set<std::string> own_nodes;
  uint64_t sessions_lost = 0;  // count of kSessionLost events seen

 private:
  void on_notification(const Notification& n) {
    if (n.type == NotificationType::kDeleted) {
      auto it = locks.find(n.path);
      if (it != locks.end()) {
        it->second->mark_lost(Status(
            Errc::kFenced, fmt::format("lock node {} was deleted by another session", n.path)));
      }
    }
    // Only the waiter queued right behind the changed node re-checks: no herd.
    for (LockWaiter* w : waiters) {
      if (w->watched == n.path) w->wakeup.notify();
    }
  }

  void on_session_event(SessionEvent e) {
    if (e == SessionEvent::kSessionLost) {
      ++sessions_lost;
      // Callbacks may destroy locks (and so erase entries): walk a copy of the keys.
      std::vector<std::string> held;
      held.reserve(locks.size());
      for (const auto& [node, lock] : locks) held.push_back(node);
      for (const std::string& node : held) {
        auto it = locks.find(node);
        if (it == locks.end()) continue;
        it->second->mark_lost(
            Status(Error::kSessionLost, fmt::format("metadata session expired: lock node {} is "
                                                    "gone with it",
                                                    node)));
      }
      for (LockWaiter* w : waiters) w->session_lost = true;
    }
    if (e != SessionEvent::kConnectionLost) {
      // Reconnected: a notification may have been missed. Lost/re-established: the attempt
      // must notice that its node is gone.
      for (LockWaiter* w : waiters) w->wakeup.notify();
    }
  }
};

}  // namespace internal

namespace {

// Removes the waiter from the core when the acquiring coroutine's frame goes away.
class WaiterRegistration {
 public:
  WaiterRegistration(internal::LockCore* core, internal::LockWaiter* waiter)
      : core_(core), waiter_(waiter) {
    core_->waiters.insert(waiter_);
  }
  ~WaiterRegistration() { core_->waiters.erase(waiter_); }
  WaiterRegistration(const WaiterRegistration&) = delete;
  WaiterRegistration& operator=(const WaiterRegistration&) = delete;

 private:
  internal::LockCore* core_;
  internal::LockWaiter* waiter_;
};

}  // namespace

// --- ResourceLock ---

ResourceLock::ResourceLock(Passkey, std::shared_ptr<internal::LockCore> core, std::string resource,
                           std::string node_path, std::string value)
    : core_(std::move(core)),
      resource_(std::move(resource)),
      node_path_(std::move(node_path)),
      value_(std::move(value)) {
  core_->locks[node_path_] = this;
  core_->own_nodes.insert(node_path_);
}

ResourceLock::~ResourceLock() {
  if (held_) {
    core_->log.warn("lock on {} destroyed while held: {} stays until the session ends", resource_,
                    node_path_);
  }
  auto it = core_->locks.find(node_path_);
  if (it != core_->locks.end() && it->second == this) core_->locks.erase(it);
  core_->own_nodes.erase(node_path_);
}

void ResourceLock::on_lost(LostCallback callback) {
  if (!held_ && !lost_reason_.ok()) {
    callback(lost_reason_);
    return;
  }
  on_lost_ = std::move(callback);
}

void ResourceLock::mark_lost(Status why) {
  if (!held_) return;
  held_ = false;
  lost_reason_ = std::move(why);
  core_->locks.erase(node_path_);
  core_->own_nodes.erase(node_path_);
  core_->log.warn("lost the lock on {}: {}", resource_, lost_reason_.to_string());
  if (on_lost_) {
    // The callback may destroy this lock (and on_lost_ with it): run a copy, touch nothing
    // afterwards.
    LostCallback callback = std::move(on_lost_);
    callback(lost_reason_);
  }
}

Task<Status> ResourceLock::release() {
  if (!held_ || releasing_) co_return Status::OK();  // lost already: the node is gone
  releasing_ = true;
  held_ = false;
  // Our own delete notification must not count as a loss.
  core_->locks.erase(node_path_);
  const uint64_t losses_before = core_->sessions_lost;
  Status st = co_await core_->store->remove(node_path_);
  releasing_ = false;
  if (st.ok() || st.is(Errc::kNotFound) || st.code() == Error::kSessionLost ||
      st.code() == Error::kClosed || core_->sessions_lost != losses_before) {
    // Deleted now, or gone with the session: nobody can find us as the holder any more.
    core_->own_nodes.erase(node_path_);
    co_return Status::OK();
  }
  // The node may still be there, in a live session: we still hold the lock.
  held_ = true;
  core_->locks[node_path_] = this;
  co_return st;
}

// --- LockManager ---

LockManager::LockManager(MetadataStore* store, Executor executor)
    : core_(std::make_shared<internal::LockCore>(store, std::move(executor))) {
  core_->register_listeners(core_);
}

LockManager::~LockManager() = default;

Task<Result<LockAttempt>> LockManager::try_acquire(std::string resource, std::string value) {
  co_return co_await lock(std::move(resource), std::move(value), /*wait=*/false,
                          Clock::time_point::max());
}

Task<Result<std::unique_ptr<ResourceLock>>> LockManager::acquire(
    std::string resource, std::string value, std::chrono::milliseconds timeout) {
  auto attempt =
      co_await lock(std::move(resource), std::move(value), /*wait=*/true, Clock::now() + timeout);
  if (!attempt.ok()) co_return attempt.status();
  MAGNETAR_ASSERT(attempt->acquired(), "a waiting acquire returned without the lock");
  co_return std::move(attempt->lock);
}

Task<Result<std::optional<LockHolder>>> LockManager::holder(std::string resource) {
  Status valid = validate_path(resource);
  if (!valid.ok()) co_return valid;
  auto owner =
      co_await internal::read_lowest(core_->store, resource, std::string(internal::kLockPrefix));
  if (!owner.ok()) co_return owner.status();
  if (!owner->has_value()) co_return std::optional<LockHolder>();
  internal::SequentialOwner& o = **owner;
  co_return std::optional<LockHolder>(
      LockHolder{std::move(o.value), std::move(o.path), o.stat.ephemeral_owner});
}

Task<Result<std::optional<std::string>>> LockManager::holder_value(std::string resource) {
  auto h = co_await holder(std::move(resource));
  if (!h.ok()) co_return h.status();
  if (!h->has_value()) co_return std::optional<std::string>();
  co_return std::optional<std::string>(std::move((*h)->value));
}

Task<void> LockManager::abandon(std::string node_path) {
  core_->own_nodes.erase(node_path);
  Status st = co_await core_->store->remove(node_path);
  if (!st.ok() && !st.is(Errc::kNotFound) && st.code() != Error::kSessionLost &&
      st.code() != Error::kClosed) {
    // The node stays in the queue until our session ends; it may even become the holder,
    // locking the resource for nobody. Nothing better to do without the store.
    core_->log.error("cannot delete abandoned lock node {}: {}", node_path, st.to_string());
  }
}

Task<Result<LockAttempt>> LockManager::lock(std::string resource, std::string value, bool wait,
                                            Clock::time_point deadline) {
  Status valid = validate_path(resource);
  if (!valid.ok()) co_return valid;
  if (resource == "/") {
    co_return Status(Error::kInvalidPath, "the root node cannot be locked");
  }
  std::shared_ptr<internal::LockCore> core = core_;
  MetadataStore* store = core->store;
  const std::string prefix(internal::kLockPrefix);

  if (!wait) {
    // Already held: report the holder without adding a node to the queue.
    auto owner = co_await internal::read_lowest(store, resource, prefix);
    if (!owner.ok()) co_return owner.status();
    if (owner->has_value()) co_return LockAttempt{nullptr, std::move((*owner)->value)};
  }

  internal::LockWaiter waiter(core->executor);
  WaiterRegistration registration(core.get(), &waiter);

  PutOptions options;
  options.ephemeral = true;
  options.sequential = true;
  auto created = co_await store->put_recursive(join_path(resource, prefix), value, options);
  if (!created.ok()) {
    if (internal::outcome_unknown(created.status())) {
      co_await internal::remove_orphans(store, resource, prefix, value, core->own_node_list(),
                                        core->log);
    }
    co_return created.status();
  }
  const std::string node = created->path;
  const std::string name(node_name(node));
  core->own_nodes.insert(node);

  while (true) {
    if (waiter.session_lost) {
      core->own_nodes.erase(node);
      co_return Status(
          Error::kSessionLost,
          fmt::format("metadata session expired while acquiring the lock on {}", resource));
    }
    auto listed = co_await internal::list_sequential(store, resource, prefix);
    if (!listed.ok()) {
      co_await abandon(node);
      co_return listed.status();
    }
    std::optional<size_t> index = internal::find_child(*listed, name);
    if (!index) {
      core->own_nodes.erase(node);
      if (waiter.session_lost) continue;  // reported above
      co_return Status(Errc::kFenced,
                       fmt::format("lock node {} was deleted while acquiring the lock", node));
    }

    if (*index == 0) {
      // The lowest: we hold it. Check the node once more, which also makes ZooKeeper watch
      // it, so that its deletion by anyone else is reported as a loss.
      auto present = co_await store->exists(node);
      if (!present.ok()) {
        co_await abandon(node);
        co_return present.status();
      }
      if (!*present || waiter.session_lost) continue;  // reported at the top of the loop
      core->log.debug("acquired the lock on {} ({})", resource, node);
      co_return LockAttempt{
          std::make_unique<ResourceLock>(ResourceLock::Passkey(), core, resource, node, value),
          value};
    }

    if (!wait) {
      auto holder = co_await store->get(join_path(resource, listed->front().name));
      if (!holder.ok()) {
        co_await abandon(node);
        co_return holder.status();
      }
      if (!holder->has_value()) continue;  // the holder just left: look again
      co_await abandon(node);
      co_return LockAttempt{nullptr, std::move((*holder)->value)};
    }

    // Queue behind our immediate predecessor: watch it, then wait for it to change.
    waiter.watched = join_path(resource, (*listed)[*index - 1].name);
    auto present = co_await store->exists(waiter.watched);
    if (!present.ok()) {
      co_await abandon(node);
      co_return present.status();
    }
    if (!*present) continue;
    bool woken = co_await waiter.wakeup.wait_until(deadline);
    if (!woken) {
      co_await abandon(node);
      auto owner = co_await internal::read_lowest(store, resource, prefix);
      std::string held_by = owner.ok() && owner->has_value() ? (*owner)->value : "?";
      co_return Status(
          Error::kTimeout,
          fmt::format("timed out waiting for the lock on {} (held by {})", resource, held_by));
    }
  }
}

}  // namespace magnetar::metadata
