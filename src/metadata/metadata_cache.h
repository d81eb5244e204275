#pragma once
// MetadataCache<T>: a typed, read-through cache of JSON-encoded metadata nodes (policies,
// ledger metadata, load reports), in the spirit of Pulsar's MetadataCache.
//
//   MetadataCache<Policies> policies(store, executor);
//   auto p = co_await policies.get("/admin/policies/public/default");      // store, then memory
//   MetadataCache<Policies>::Modifier set_ttl = [](std::optional<Policies> cur)
//       -> Result<Policies> { Policies p = cur.value_or(Policies{}); p.ttl = 60; return p; };
//   auto updated = co_await policies.read_modify_update(path, set_ttl);
//
// (Name the modifier as above: GCC 12 destroys a lambda converted to std::function inside a
// co_await operand twice, as it does brace-initialized aggregates there.)
//
// T needs nlohmann::json `to_json`/`from_json` (found by ADL) and must be copyable.
//
// Coherence: a value is cached with its Stat when read or written through this cache; it is
// dropped when the store notifies kCreated/kModified/kDeleted for its path, when invalidate()
// says so, and wholesale on kSessionLost/kSessionReestablished/kReconnected (notifications
// may have been missed). On ZooKeeper the store notifies only nodes this session has read or
// written; every cached path is one of those. A read that was in flight when its path was
// invalidated returns its value but does not cache it, so a late answer never overwrites a
// newer state. Absent nodes are not cached (a store need not watch a node it never found).
// After its own create/update the cache holds the written value and version, unless a
// notification for that path arrived while the write was in flight. Notifications carry no
// version, so the cache cannot tell its own write's notification from another session's and
// drops the value either way: on ZooKeeper (whose backend watches a node before writing it)
// the own notification comes during the write, on memory: and rocksdb: just after it. The
// next get() then reads the store once.
//
// Threading: a cache belongs to the executor (event loop) passed to its constructor. Call
// every method from coroutines running on that executor; the store listeners it registers
// run there too. Not thread-safe otherwise.
// Lifetime: `store` must outlive the cache. Destroy the cache on its executor, with no
// operation of it in flight.

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/errors.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata {

// A decoded value with the stat of the node it came from.
template <typename T>
struct Versioned {
  T value;
  Stat stat;
};

struct MetadataCacheOptions {
  // read_modify_update gives up with kBadVersion after this many lost CAS races.
  int max_update_attempts = 32;
};

namespace internal {
// Non-template parts of the cache (metadata_cache.cc).
Status json_decode_error(const std::string& path, const char* what);
Status json_encode_error(const std::string& path, const char* what);
Status update_gave_up(const std::string& path, int attempts);
// A short random pause before retrying a lost CAS: 0..min(attempt, 8) milliseconds.
std::chrono::milliseconds update_retry_delay(int attempt, std::minstd_rand& rng);
}  // namespace internal

template <typename T>
class MetadataCache {
 public:
  // Computes the new value from the current one (nullopt: the node does not exist). May be
  // called several times when concurrent writers race; must not have side effects. An
  // error status aborts the update and is returned as is.
  using Modifier = std::function<Result<T>(std::optional<T>)>;

  MetadataCache(MetadataStore* store, Executor executor, MetadataCacheOptions options = {});
  ~MetadataCache();
  MetadataCache(const MetadataCache&) = delete;
  MetadataCache& operator=(const MetadataCache&) = delete;

  // The decoded value, or nullopt when the node does not exist. Served from memory when
  // cached. An empty value (a parent node put_recursive made) decodes as {}; a value that is
  // not valid JSON for T fails with Errc::kCorruption naming the path.
  Task<Result<std::optional<T>>> get(std::string path);
  Task<Result<std::optional<Versioned<T>>>> get_with_stat(std::string path);

  // Creates the node (and missing parents); fails with Error::kBadVersion when it exists.
  Task<Result<Stat>> create(std::string path, T value);

  // Reads the current value (nullopt when absent), applies `modify`, and writes the result
  // with the version read (compare-and-set; creates the node when it was absent). A lost race
  // re-reads from the store and retries, up to options.max_update_attempts times, then fails
  // with Error::kBadVersion. Returns the value written and its stat.
  Task<Result<Versioned<T>>> read_modify_update(std::string path, Modifier modify);

  // Deletes the node; kNotFound when it does not exist.
  Task<Status> remove(std::string path);

  // Drops cached state so that the next get() reads the store.
  void invalidate(const std::string& path);
  void invalidate_all();

  // Whether `path` is currently served from memory (for tests and metrics).
  bool is_cached(const std::string& path) const { return entries_.count(path) != 0; }

 private:
  // Reads and writes in flight for one path. `generation` moves on every invalidation of the
  // path, so a completing operation can tell whether its answer is still current.
  struct Pending {
    uint64_t generation = 0;
    int in_flight = 0;
  };
  struct FillToken {
    std::string path;
    uint64_t generation;
    uint64_t all_generation;
  };

  FillToken begin_fill(const std::string& path);
  // Ends an operation started by begin_fill; caches `value` (if any) when nothing
  // invalidated the path meanwhile and it is not older than what is cached.
  void end_fill(const FillToken& token, const Versioned<T>* value);

  // A CAS write: creates (with parents) when expected_version is -1, else updates.
  Task<Result<PutResult>> write(std::string path, std::string bytes, int64_t expected_version);
  void on_notification(const Notification& n);
  void on_session_event(SessionEvent e);
  Task<void> sleep(std::chrono::milliseconds d);

  static Result<T> decode(const std::string& path, const std::string& bytes);
  static Result<std::string> encode(const std::string& path, const T& value);

  MetadataStore* const store_;
  const Executor executor_;
  const MetadataCacheOptions options_;
  ListenerId listener_ = 0;
  ListenerId session_listener_ = 0;
  // Listeners hold a weak reference: a notification already queued when the cache is
  // destroyed finds it expired and does nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  std::unordered_map<std::string, Versioned<T>> entries_;
  std::unordered_map<std::string, Pending> pending_;
  uint64_t all_generation_ = 0;  // moves on invalidate_all()
  std::minstd_rand rng_{std::random_device{}()};
};

// --- Implementation. ---

template <typename T>
MetadataCache<T>::MetadataCache(MetadataStore* store, Executor executor,
                                MetadataCacheOptions options)
    : store_(store), executor_(std::move(executor)), options_(options) {
  std::weak_ptr<bool> alive = alive_;
  listener_ = store_->add_listener(executor_, [this, alive](const Notification& n) {
    if (!alive.expired()) on_notification(n);
  });
  session_listener_ = store_->add_session_listener(executor_, [this, alive](SessionEvent e) {
    if (!alive.expired()) on_session_event(e);
  });
}

template <typename T>
MetadataCache<T>::~MetadataCache() {
  store_->remove_listener(listener_);
  store_->remove_listener(session_listener_);
}

template <typename T>
Task<Result<std::optional<T>>> MetadataCache<T>::get(std::string path) {
  auto got = co_await get_with_stat(std::move(path));
  if (!got.ok()) co_return got.status();
  if (!got->has_value()) co_return std::optional<T>();
  co_return std::optional<T>(std::move((*got)->value));
}

template <typename T>
Task<Result<std::optional<Versioned<T>>>> MetadataCache<T>::get_with_stat(std::string path) {
  auto it = entries_.find(path);
  if (it != entries_.end()) co_return std::optional<Versioned<T>>(it->second);

  FillToken token = begin_fill(path);
  auto got = co_await store_->get(path);
  if (!got.ok() || !got->has_value()) {
    end_fill(token, nullptr);
    if (!got.ok()) co_return got.status();
    co_return std::optional<Versioned<T>>();
  }
  Result<T> decoded = decode(path, (*got)->value);
  if (!decoded.ok()) {
    end_fill(token, nullptr);
    co_return decoded.status();
  }
  Versioned<T> out{std::move(decoded).value(), (*got)->stat};
  end_fill(token, &out);
  co_return std::optional<Versioned<T>>(std::move(out));
}

template <typename T>
Task<Result<Stat>> MetadataCache<T>::create(std::string path, T value) {
  Result<std::string> bytes = encode(path, value);
  if (!bytes.ok()) co_return bytes.status();
  FillToken token = begin_fill(path);
  PutOptions options;
  options.expected_version = -1;
  auto put = co_await store_->put_recursive(path, std::move(bytes).value(), options);
  if (!put.ok()) {
    end_fill(token, nullptr);
    co_return put.status();
  }
  Versioned<T> written{std::move(value), put->stat};
  end_fill(token, &written);
  co_return put->stat;
}

template <typename T>
Task<Result<Versioned<T>>> MetadataCache<T>::read_modify_update(std::string path, Modifier modify) {
  for (int attempt = 0; attempt < options_.max_update_attempts; ++attempt) {
    if (attempt > 0) {
      // Lost a race: the cached copy (if any) is stale. Pause a little so that updaters on
      // other loops do not keep colliding, then read the store again.
      invalidate(path);
      auto delay = internal::update_retry_delay(attempt, rng_);
      if (delay.count() > 0) co_await sleep(delay);
    }
    auto current = co_await get_with_stat(path);
    if (!current.ok()) co_return current.status();

    std::optional<T> input;
    int64_t expected_version = -1;  // -1: "must not exist"
    if (current->has_value()) {
      input = (*current)->value;
      expected_version = (*current)->stat.version;
    }
    Result<T> next = modify(std::move(input));
    if (!next.ok()) co_return next.status();
    Result<std::string> bytes = encode(path, *next);
    if (!bytes.ok()) co_return bytes.status();

    FillToken token = begin_fill(path);
    Result<PutResult> put = co_await write(path, std::move(bytes).value(), expected_version);
    if (put.ok()) {
      Versioned<T> written{std::move(next).value(), put->stat};
      end_fill(token, &written);
      co_return written;
    }
    end_fill(token, nullptr);
    // kBadVersion: someone wrote first. kNotFound: the node we read was deleted before our
    // versioned write. Both mean "re-read and try again".
    if (!put.status().is(Errc::kBadVersion) && !put.status().is(Errc::kNotFound)) {
      co_return put.status();
    }
  }
  invalidate(path);
  co_return internal::update_gave_up(path, options_.max_update_attempts);
}

template <typename T>
Task<Result<PutResult>> MetadataCache<T>::write(std::string path, std::string bytes,
                                                int64_t expected_version) {
  PutOptions options;
  options.expected_version = expected_version;
  if (expected_version == -1) {
    co_return co_await store_->put_recursive(std::move(path), std::move(bytes), options);
  }
  co_return co_await store_->put(std::move(path), std::move(bytes), options);
}

template <typename T>
Task<Status> MetadataCache<T>::remove(std::string path) {
  Status st = co_await store_->remove(path);
  // Also after a failure: the node may be gone or changed, and reads in flight must not
  // put back what they saw before the delete.
  invalidate(path);
  co_return st;
}

template <typename T>
void MetadataCache<T>::invalidate(const std::string& path) {
  entries_.erase(path);
  auto it = pending_.find(path);
  if (it != pending_.end()) ++it->second.generation;
}

template <typename T>
void MetadataCache<T>::invalidate_all() {
  entries_.clear();
  ++all_generation_;
}

template <typename T>
typename MetadataCache<T>::FillToken MetadataCache<T>::begin_fill(const std::string& path) {
  Pending& p = pending_[path];
  ++p.in_flight;
  return FillToken{path, p.generation, all_generation_};
}

template <typename T>
void MetadataCache<T>::end_fill(const FillToken& token, const Versioned<T>* value) {
  auto it = pending_.find(token.path);
  MAGNETAR_ASSERT(it != pending_.end() && it->second.in_flight > 0,
                  "metadata cache: end_fill without begin_fill");
  bool current =
      it->second.generation == token.generation && all_generation_ == token.all_generation;
  if (--it->second.in_flight == 0) pending_.erase(it);
  if (!current || value == nullptr) return;
  auto cached = entries_.find(token.path);
  if (cached != entries_.end() && cached->second.stat.version > value->stat.version) return;
  entries_.insert_or_assign(token.path, *value);
}

template <typename T>
void MetadataCache<T>::on_notification(const Notification& n) {
  switch (n.type) {
    case NotificationType::kCreated:
    case NotificationType::kModified:
    case NotificationType::kDeleted:
      invalidate(n.path);
      break;
    case NotificationType::kChildrenChanged:
      break;  // the cache holds values, not child lists
  }
}

template <typename T>
void MetadataCache<T>::on_session_event(SessionEvent e) {
  switch (e) {
    case SessionEvent::kReconnected:
    case SessionEvent::kSessionLost:
    case SessionEvent::kSessionReestablished:
      invalidate_all();
      break;
    case SessionEvent::kConnectionLost:
      break;  // values stay usable; kReconnected or kSessionLost follows
  }
}

template <typename T>
Task<void> MetadataCache<T>::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(executor_, d);
  co_await timer.async_wait(asio::use_awaitable);
}

template <typename T>
Result<T> MetadataCache<T>::decode(const std::string& path, const std::string& bytes) {
  // nlohmann::json and user from_json functions report errors by throwing; nothing escapes.
  try {
    // A node made as a parent by put_recursive holds nothing: an empty object.
    nlohmann::json j = bytes.empty() ? nlohmann::json::object() : nlohmann::json::parse(bytes);
    return j.get<T>();
  } catch (const std::exception& e) {
    return internal::json_decode_error(path, e.what());
  }
}

template <typename T>
Result<std::string> MetadataCache<T>::encode(const std::string& path, const T& value) {
  try {
    nlohmann::json j = value;
    return j.dump();
  } catch (const std::exception& e) {
    return internal::json_encode_error(path, e.what());
  }
}

}  // namespace magnetar::metadata
