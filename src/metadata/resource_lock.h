#pragma once
// Exclusive locks on resource paths (namespace bundles, topics, the leader's duties), built on
// ephemeral sequential nodes so that they work on every MetadataStore backend:
//
//   <resource>/lock-NNNNNNNNNN   ephemeral, sequential; value = the contender's value
//                                (e.g. the broker's service URL)
//
// The contender whose node has the lowest sequence number holds the lock; holder_value()
// reads that node, which is how lookups find the broker owning a bundle. A waiting contender
// watches only the node just below its own (exists() + change notifications), so a release
// wakes one waiter, never the whole queue. The resource node itself is persistent (created
// when missing) and is left in place after release.
//
// Loss: a lock lives exactly as long as its node. When the session expires
// (SessionEvent::kSessionLost) or another session deletes the node, the lock reports it at
// once: is_held() turns false and the on_lost callback runs. The owner must then stop acting
// as owner; another process may hold the lock already. The lock is NOT taken again after
// kSessionReestablished: the caller decides whether to acquire anew. Closing the store ends
// the session too, but the store stops notifying its own listeners when closed: whoever
// closes the store stops using its locks.
//
// Threading: a LockManager and its locks belong to the executor passed to the manager; call
// them from coroutines on that executor (the store listeners run there too).
// Lifetime: `store` outlives the manager and every lock; a lock may outlive its manager.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata {

namespace internal {
class LockCore;  // state shared by a manager and its locks (resource_lock.cc)
}  // namespace internal

// A lock held by this session. Obtained from LockManager; release() it when done.
class ResourceLock {
 public:
  // Runs once, on the executor, when the lock is lost without release(); `why` says how.
  using LostCallback = std::function<void(const Status& why)>;

  struct Passkey {  // only LockManager constructs locks
   private:
    friend class LockManager;
    Passkey() = default;
  };
  ResourceLock(Passkey, std::shared_ptr<internal::LockCore> core, std::string resource,
               std::string node_path, std::string value);
  // Destroying a held lock does not delete its node (that needs a store call): the resource
  // stays locked until the session ends. Always release() first; a warning is logged if not.
  ~ResourceLock();
  ResourceLock(const ResourceLock&) = delete;
  ResourceLock& operator=(const ResourceLock&) = delete;

  const std::string& resource() const { return resource_; }
  const std::string& node_path() const { return node_path_; }  // <resource>/lock-NNNNNNNNNN
  const std::string& value() const { return value_; }

  // True from acquisition until release() or loss.
  bool is_held() const { return held_; }
  // Why the lock was lost (OK while held or after a plain release).
  const Status& lost_reason() const { return lost_reason_; }

  // Sets the loss callback. When the lock is already lost it runs at once (from this call),
  // so no loss goes unnoticed between acquisition and registration. The callback may destroy
  // the lock.
  void on_lost(LostCallback callback);

  // Deletes the lock node. OK when the node is already gone (lost lock, closed session). On
  // other failures the lock stays held and the caller may retry.
  Task<Status> release();

  // Called by the manager's listeners (internal).
  void mark_lost(Status why);

 private:
  std::shared_ptr<internal::LockCore> core_;
  const std::string resource_;
  const std::string node_path_;
  const std::string value_;
  bool held_ = true;
  bool releasing_ = false;
  Status lost_reason_;
  LostCallback on_lost_;
};

// Outcome of LockManager::try_acquire.
struct LockAttempt {
  std::unique_ptr<ResourceLock> lock;  // set: this caller now holds the lock
  std::string holder_value;            // lock unset: the value of the current holder

  bool acquired() const { return lock != nullptr; }
};

// Who holds a resource.
struct LockHolder {
  std::string value;      // what the holder stored (e.g. its broker URL)
  std::string node_path;  // its lock node
  int64_t session_id = 0;
};

class LockManager {
 public:
  LockManager(MetadataStore* store, Executor executor);
  ~LockManager();
  LockManager(const LockManager&) = delete;
  LockManager& operator=(const LockManager&) = delete;

  // Takes the lock on `resource` when it is free, without waiting. When another contender
  // holds it, returns no lock and the holder's value (this caller's node, if it made one,
  // is deleted). Store errors come back as a status.
  Task<Result<LockAttempt>> try_acquire(std::string resource, std::string value);

  // Waits up to `timeout` for the lock, in arrival order. Fails with Error::kTimeout (naming
  // the holder), Error::kSessionLost when the session expired meanwhile, or a store error;
  // on failure this caller's node is deleted.
  Task<Result<std::unique_ptr<ResourceLock>>> acquire(std::string resource, std::string value,
                                                      std::chrono::milliseconds timeout);

  // The current holder of `resource`, read from the store; nullopt when nobody holds it.
  Task<Result<std::optional<LockHolder>>> holder(std::string resource);
  Task<Result<std::optional<std::string>>> holder_value(std::string resource);

 private:
  using Clock = std::chrono::steady_clock;

  Task<Result<LockAttempt>> lock(std::string resource, std::string value, bool wait,
                                 Clock::time_point deadline);
  // Deletes a node this manager created but does not hold (a failed or busy attempt).
  Task<void> abandon(std::string node_path);

  std::shared_ptr<internal::LockCore> core_;
};

}  // namespace magnetar::metadata
