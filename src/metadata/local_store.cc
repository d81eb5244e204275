#include "metadata/local_store.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include <unistd.h>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "common/logging.h"

namespace magnetar::metadata {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Node {
  std::string value;
  Stat stat;
  int64_t next_sequence = 0;       // suffix of this node's next sequential child
  std::set<std::string> children;  // names, not persisted (rebuilt at load)
};

// A node as stored in RocksDB under its path:
//   [version][creation_time_ms][modification_time_ms][ephemeral_owner][next_sequence]
//   [value bytes ...]
// five little-endian int64 fields, then the value.
constexpr size_t kRecordHeader = 5 * sizeof(int64_t);

std::string encode_node(const Node& n) {
  std::string out(kRecordHeader, '\0');
  int64_t fields[5] = {n.stat.version, n.stat.creation_time_ms, n.stat.modification_time_ms,
                       n.stat.ephemeral_owner, n.next_sequence};
  std::memcpy(out.data(), fields, kRecordHeader);
  out += n.value;
  return out;
}

bool decode_node(std::string_view bytes, Node* n) {
  if (bytes.size() < kRecordHeader) return false;
  int64_t fields[5];
  std::memcpy(fields, bytes.data(), kRecordHeader);
  n->stat.version = fields[0];
  n->stat.creation_time_ms = fields[1];
  n->stat.modification_time_ms = fields[2];
  n->stat.ephemeral_owner = fields[3];
  n->stat.ephemeral = fields[3] != 0;
  n->next_sequence = fields[4];
  n->value.assign(bytes.substr(kRecordHeader));
  return true;
}

struct LocalListener {
  Executor executor;
  std::function<void(const Notification&)> on_change;
  std::function<void(SessionEvent)> on_session;
  int64_t session = 0;
  std::atomic<bool> active{true};
};

// What one pass of the worker collects: the durable write, then what to run once it landed.
struct Group {
  rocksdb::WriteBatch batch;
  std::vector<std::function<void(const Status&)>> completions;
  std::vector<Notification> notifications;
};

class LocalDatabase {
 public:
  LocalDatabase(LocalBackend backend, std::string name)
      : backend_(backend), name_(std::move(name)), log_(log::Logger("metadata")) {
    log_ = log_.with("store", backend == LocalBackend::kMemory ? "memory:" + name_
                                                                 : "rocksdb:" + name_);
    nodes_["/"] = Node{};
  }

  ~LocalDatabase() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (worker_.joinable()) worker_.join();  // drains the queue first
  }

  Status open() {
    if (backend_ == LocalBackend::kRocksDb) MAGNETAR_TRY(load());
    worker_ = std::thread([this] { run(); });
    return Status::OK();
  }

  // Queues an operation for the worker thread. Callable from any thread.
  void submit(std::function<void(Group&)> op) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(op));
    }
    cv_.notify_one();
  }

  ListenerId add_listener(std::shared_ptr<LocalListener> l) {
    std::lock_guard<std::mutex> lock(listeners_mu_);
    ListenerId id = ++next_listener_;
    listeners_[id] = std::move(l);
    return id;
  }

  void remove_listener(ListenerId id) {
    std::lock_guard<std::mutex> lock(listeners_mu_);
    auto it = listeners_.find(id);
    if (it == listeners_.end()) return;
    it->second->active = false;
    listeners_.erase(it);
  }

  void remove_session_listeners(int64_t session) {
    std::lock_guard<std::mutex> lock(listeners_mu_);
    for (auto it = listeners_.begin(); it != listeners_.end();) {
      if (it->second->session == session) {
        it->second->active = false;
        it = listeners_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // --- Tree operations: worker thread only. ---

  const Status& failure() const { return failed_; }

  std::optional<GetResult> get(const std::string& path) const {
    auto it = nodes_.find(path);
    if (it == nodes_.end()) return std::nullopt;
    return GetResult{it->second.value, it->second.stat};
  }

  std::vector<std::string> children(const std::string& path) const {
    auto it = nodes_.find(path);
    if (it == nodes_.end()) return {};
    return std::vector<std::string>(it->second.children.begin(), it->second.children.end());
  }

  Result<PutResult> put(Group& g, const std::string& path, std::string value,
                        const PutOptions& o, int64_t session) {
    if (path == "/") return Status(Error::kInvalidPath, "the root node cannot be written");
    auto it = nodes_.find(path);
    bool creating = it == nodes_.end() || o.sequential;
    if (!creating) {
      Node& n = it->second;
      if (o.expected_version && *o.expected_version != n.stat.version) {
        return Status(Error::kBadVersion,
                      *o.expected_version == -1
                          ? fmt::format("'{}' already exists", path)
                          : fmt::format("'{}' is at version {}, expected {}", path,
                                        n.stat.version, *o.expected_version));
      }
      n.value = std::move(value);
      n.stat.version += 1;
      n.stat.modification_time_ms = now_ms();
      persist(g, path, n);
      g.notifications.push_back({NotificationType::kModified, path});
      return PutResult{path, n.stat};
    }
    if (o.expected_version && *o.expected_version >= 0) {
      return Status(Error::kNotFound,
                    fmt::format("'{}' does not exist (expected version {})", path,
                                *o.expected_version));
    }
    std::string parent = parent_path(path);
    auto pit = nodes_.find(parent);
    if (pit == nodes_.end()) {
      return Status(Error::kNotFound, fmt::format("parent '{}' of '{}' does not exist", parent,
                                                  path));
    }
    if (pit->second.stat.ephemeral) {
      return Status(Error::kInvalidPath,
                    fmt::format("'{}': ephemeral node '{}' cannot have children", path, parent));
    }
    std::string final_path = path;
    if (o.sequential) {
      final_path = fmt::format("{}{:010d}", path, pit->second.next_sequence++);
      persist(g, parent, pit->second);
      if (nodes_.count(final_path)) {
        return Status(Error::kBadVersion, fmt::format("'{}' already exists", final_path));
      }
    }
    Node n;
    n.value = std::move(value);
    n.stat.creation_time_ms = n.stat.modification_time_ms = now_ms();
    if (o.ephemeral) {
      n.stat.ephemeral = true;
      n.stat.ephemeral_owner = session;
      ephemerals_[session].insert(final_path);
    }
    pit->second.children.insert(std::string(node_name(final_path)));
    persist(g, final_path, n);
    Stat stat = n.stat;
    nodes_.emplace(final_path, std::move(n));
    g.notifications.push_back({NotificationType::kCreated, final_path});
    g.notifications.push_back({NotificationType::kChildrenChanged, parent});
    return PutResult{final_path, stat};
  }

  Status remove(Group& g, const std::string& path, std::optional<int64_t> expected) {
    if (path == "/") return Status(Error::kInvalidPath, "the root node cannot be deleted");
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
      return Status(Error::kNotFound, fmt::format("'{}' does not exist", path));
    }
    if (expected && *expected != it->second.stat.version) {
      return Status(Error::kBadVersion, fmt::format("'{}' is at version {}, expected {}", path,
                                                    it->second.stat.version, *expected));
    }
    if (!it->second.children.empty()) {
      return Status(Error::kNotEmpty, fmt::format("'{}' has {} children", path,
                                                  it->second.children.size()));
    }
    erase(g, it);
    return Status::OK();
  }

  void close_session(Group& g, int64_t session) {
    auto it = ephemerals_.find(session);
    if (it == ephemerals_.end()) return;
    std::set<std::string> paths = std::move(it->second);
    ephemerals_.erase(it);
    for (const std::string& p : paths) {
      auto nit = nodes_.find(p);
      if (nit != nodes_.end()) erase(g, nit);
    }
  }

  // Fails the pending group's operations if the database is in a failed state.
  void fail_all(Group& g) {
    for (auto& c : g.completions) c(failed_);
  }

 private:
  void erase(Group& g, std::unordered_map<std::string, Node>::iterator it) {
    std::string path = it->first;
    if (it->second.stat.ephemeral) {
      auto e = ephemerals_.find(it->second.stat.ephemeral_owner);
      if (e != ephemerals_.end()) e->second.erase(path);
    }
    std::string parent = parent_path(path);
    nodes_[parent].children.erase(std::string(node_name(path)));
    nodes_.erase(it);
    if (backend_ == LocalBackend::kRocksDb) g.batch.Delete(path);
    g.notifications.push_back({NotificationType::kDeleted, path});
    g.notifications.push_back({NotificationType::kChildrenChanged, parent});
  }

  void persist(Group& g, const std::string& path, const Node& n) {
    if (backend_ == LocalBackend::kRocksDb) g.batch.Put(path, encode_node(n));
  }

  Status load() {
    std::error_code mkdir_error;
    std::filesystem::create_directories(name_, mkdir_error);
    if (mkdir_error) {
      return Status(Error::kBackend, fmt::format("cannot create metadata directory '{}': {}",
                                                 name_, mkdir_error.message()));
    }
    rocksdb::Options options;
    options.create_if_missing = true;
    options.max_open_files = 256;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, name_, &raw);
    if (!s.ok()) {
      return Status(Error::kBackend,
                    fmt::format("cannot open metadata database '{}': {}", name_, s.ToString()));
    }
    db_.reset(raw);
    std::unique_ptr<rocksdb::Iterator> iter(db_->NewIterator(rocksdb::ReadOptions()));
    for (iter->SeekToFirst(); iter->Valid(); iter->Next()) {
      Node n;
      if (!decode_node(iter->value().ToStringView(), &n)) {
        return Status(Error::kBackend, fmt::format("metadata database '{}': corrupt record for "
                                                   "'{}'",
                                                   name_, iter->key().ToString()));
      }
      nodes_[iter->key().ToString()] = std::move(n);
    }
    if (!iter->status().ok()) {
      return Status(Error::kBackend, fmt::format("metadata database '{}': {}", name_,
                                                 iter->status().ToString()));
    }
    for (auto& [path, node] : nodes_) {
      if (path == "/") continue;
      auto parent = nodes_.find(parent_path(path));
      if (parent == nodes_.end()) {
        return Status(Error::kBackend, fmt::format("metadata database '{}': '{}' has no parent",
                                                   name_, path));
      }
      parent->second.children.insert(std::string(node_name(path)));
    }
    // Ephemeral nodes belonged to sessions of a previous process: remove them.
    Group g;
    std::vector<std::string> stale;
    for (auto& [path, node] : nodes_) {
      if (node.stat.ephemeral) stale.push_back(path);
    }
    for (const std::string& p : stale) erase(g, nodes_.find(p));
    if (!stale.empty()) {
      log_.info("removed {} ephemeral nodes of a previous process", stale.size());
      MAGNETAR_TRY(write(g));
    }
    return Status::OK();
  }

  Status write(Group& g) {
    if (backend_ != LocalBackend::kRocksDb || g.batch.Count() == 0) return Status::OK();
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s = db_->Write(wo, &g.batch);
    if (!s.ok()) {
      return Status(Error::kBackend,
                    fmt::format("metadata database '{}': write failed: {}", name_, s.ToString()));
    }
    return Status::OK();
  }

  void run() {
    while (true) {
      std::deque<std::function<void(Group&)>> ops;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        ops.swap(queue_);
      }
      Group g;
      for (auto& op : ops) op(g);
      if (failed_.ok()) {
        Status st = write(g);
        if (!st.ok()) {
          log_.error("{}; failing every later operation", st.message());
          failed_ = st;
        }
      }
      Status durable = failed_;
      for (auto& c : g.completions) c(durable);
      if (durable.ok()) notify(g.notifications);
    }
  }

  void notify(const std::vector<Notification>& notifications) {
    if (notifications.empty()) return;
    // Posted under the lock (a post never runs the handler inline): once remove_listener()
    // returned, nothing more is posted to that listener's executor, which its owner may
    // then destroy. Posting after releasing the lock raced with that (use after free of a
    // stopped broker's event loop).
    std::lock_guard<std::mutex> lock(listeners_mu_);
    for (const auto& entry : listeners_) {
      const std::shared_ptr<LocalListener>& l = entry.second;
      if (!l->on_change) continue;
      for (const Notification& n : notifications) {
        asio::post(l->executor, [l, n] {
          if (l->active) l->on_change(n);
        });
      }
    }
  }

  const LocalBackend backend_;
  const std::string name_;
  log::Logger log_;
  std::unique_ptr<rocksdb::DB> db_;

  // Worker-thread state.
  std::unordered_map<std::string, Node> nodes_;
  std::map<int64_t, std::set<std::string>> ephemerals_;  // session -> paths
  Status failed_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void(Group&)>> queue_;
  bool stopping_ = false;
  std::thread worker_;

  std::mutex listeners_mu_;
  std::map<ListenerId, std::shared_ptr<LocalListener>> listeners_;
  ListenerId next_listener_ = 0;
};

// Open databases of this process, so that sessions on one name share one tree.
std::mutex g_registry_mu;
std::map<std::string, std::weak_ptr<LocalDatabase>> g_registry;
std::atomic<int64_t> g_session_counter{0};

class LocalStore final : public MetadataStore {
 public:
  LocalStore(std::shared_ptr<LocalDatabase> db, StoreOptions options)
      : db_(std::move(db)),
        options_(options),
        session_(now_ms() * 1000 + (++g_session_counter % 1000)) {}

  ~LocalStore() override {
    if (open_->exchange(false)) {
      LocalDatabase* db = db_.get();
      int64_t session = session_;
      db->remove_session_listeners(session);
      db->submit([db, session](Group& g) { db->close_session(g, session); });
    }
  }

  // The operations are plain functions, not coroutines: they validate on the worker and
  // return the task of submit(). (GCC 12 miscompiles lambda init-captures of coroutine
  // parameters; keeping lambdas out of coroutine bodies here avoids the whole class.)
  Task<Result<std::optional<GetResult>>> get(std::string path) override {
    return submit<std::optional<GetResult>>(
        [open = open_, path = std::move(path)](LocalDatabase& db,
                                               Group&) -> Result<std::optional<GetResult>> {
          MAGNETAR_TRY(check(*open, path));
          return db.get(path);
        });
  }

  Task<Result<PutResult>> put(std::string path, std::string value, PutOptions o) override {
    return submit<PutResult>([open = open_, path = std::move(path), value = std::move(value), o,
                              session = session_, max = options_.max_value_size](
                                 LocalDatabase& db, Group& g) mutable -> Result<PutResult> {
      MAGNETAR_TRY(check(*open, path));
      if (value.size() > max) {
        return Status(Error::kTooLarge,
                      fmt::format("value of {} bytes for '{}' exceeds the maximum of {}",
                                  value.size(), path, max));
      }
      return db.put(g, path, std::move(value), o, session);
    });
  }

  Task<Status> remove(std::string path, std::optional<int64_t> expected) override {
    return status_of(submit<bool>([open = open_, path = std::move(path), expected](
                                      LocalDatabase& db, Group& g) -> Result<bool> {
      MAGNETAR_TRY(check(*open, path));
      if (expected && *expected < 0) {
        return Status(Error::kBadVersion, "remove takes an expected version >= 0");
      }
      MAGNETAR_TRY(db.remove(g, path, expected));
      return true;
    }));
  }

  Task<Result<std::vector<std::string>>> children(std::string path) override {
    return submit<std::vector<std::string>>(
        [open = open_, path = std::move(path)](LocalDatabase& db,
                                               Group&) -> Result<std::vector<std::string>> {
          MAGNETAR_TRY(check(*open, path));
          return db.children(path);
        });
  }

  Task<Result<bool>> exists(std::string path) override {
    return submit<bool>([open = open_, path = std::move(path)](LocalDatabase& db,
                                                                Group&) -> Result<bool> {
      MAGNETAR_TRY(check(*open, path));
      return db.get(path).has_value();
    });
  }

  ListenerId add_listener(Executor executor,
                          std::function<void(const Notification&)> listener) override {
    auto l = std::make_shared<LocalListener>();
    l->executor = std::move(executor);
    l->on_change = std::move(listener);
    l->session = session_;
    return db_->add_listener(std::move(l));
  }

  ListenerId add_session_listener(Executor executor,
                                  std::function<void(SessionEvent)> listener) override {
    // A local session never disconnects or expires: the listener is kept but never called.
    auto l = std::make_shared<LocalListener>();
    l->executor = std::move(executor);
    l->on_session = std::move(listener);
    l->session = session_;
    return db_->add_listener(std::move(l));
  }

  void remove_listener(ListenerId id) override { db_->remove_listener(id); }

  int64_t session_id() const override { return session_; }
  // No servers to negotiate with: the timeout asked for.
  std::chrono::milliseconds session_timeout() const override { return options_.session_timeout; }

  Task<Status> close() override {
    if (open_->exchange(false)) db_->remove_session_listeners(session_);
    return status_of(submit<bool>([session = session_](LocalDatabase& db, Group& g) -> Result<bool> {
      db.close_session(g, session);
      return true;
    }));
  }

 private:
  static Status check(const std::atomic<bool>& open, const std::string& path) {
    if (!open) return Status(Error::kClosed, "metadata store session is closed");
    return validate_path(path);
  }

  static Task<Status> status_of(Task<Result<bool>> task) {
    auto r = co_await std::move(task);
    co_return r.status();
  }

  // Runs `op` on the worker; the result arrives once the op's group is durable.
  // Not a coroutine (see await_callback): callers co_await the returned task.
  template <typename T, typename Op>
  Task<Result<T>> submit(Op op) {
    LocalDatabase* db = db_.get();
    return await_callback<Result<T>>(
        [db, op = std::move(op)](std::function<void(Result<T>)> done) mutable {
          db->submit([db, op = std::move(op), done = std::move(done)](Group& g) mutable {
            if (!db->failure().ok()) {
              done(db->failure());
              return;
            }
            Result<T> result = op(*db, g);
            g.completions.push_back([done = std::move(done), result = std::move(result)](
                                        const Status& durable) mutable {
              if (durable.ok()) {
                done(std::move(result));
              } else {
                done(durable);
              }
            });
          });
        });
  }

  std::shared_ptr<LocalDatabase> db_;
  StoreOptions options_;
  const int64_t session_;
  // Shared with queued operations, which may run after this object is gone.
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(true);
};

}  // namespace

Result<std::unique_ptr<MetadataStore>> open_local_store(LocalBackend backend, std::string name,
                                                        StoreOptions options) {
  // The pid is part of the key: a forked child must not reuse its parent's database objects
  // (their worker threads do not exist in the child).
  std::string key = std::to_string(::getpid()) +
                    (backend == LocalBackend::kMemory ? "/memory:" : "/rocksdb:") + name;
  std::shared_ptr<LocalDatabase> db;
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    db = g_registry[key].lock();
    if (!db) {
      db = std::make_shared<LocalDatabase>(backend, name);
      MAGNETAR_TRY(db->open());
      g_registry[key] = db;
    }
  }
  return std::unique_ptr<MetadataStore>(std::make_unique<LocalStore>(std::move(db), options));
}

}  // namespace magnetar::metadata
