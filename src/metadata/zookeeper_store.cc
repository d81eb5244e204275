// ZooKeeper backend of MetadataStore; behaviour in zookeeper_store.h.
//
// Threads and ownership:
//   caller's loop      the coroutines (get, put, ...). Each registers a PendingOp with the
//                      current Session, issues one async C call and awaits a ReplySlot that
//                      the first of {C completion, deadline timer, forced close} fills.
//   completion thread  one per zhandle_t, the C client's: runs our completions and watchers.
//                      They fill ReplySlots, post notifications to the listeners' executors
//                      and re-arm watches with further async calls. They never block.
//   janitor thread     ours, one per store: zookeeper_init and zookeeper_close, which block
//                      (name resolution; closing waits for the server and joins threads).
// A Session outlives its zhandle_t: the store keeps it in a shared_ptr at least until the
// handle is closed (which joins the handle's threads), so the raw Session* handed to the C
// client as watcher and completion context is valid whenever the C client can call us.
// The store outlives every handle: its destructor closes the last one on the janitor and
// joins the janitor.
//
// Lock order: ZooKeeperStore::mu_ -> (the listener registry's lock) -> Session::handle_mu_ ->
// Session::ops_mu_. No lock is held
// while calling zookeeper_close, filling a ReplySlot or running a listener.

#include "metadata/zookeeper_store.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/redirect_error.hpp>
#include <fmt/format.h>

#include "common/logging.h"
#include "metadata/listeners.h"

namespace magnetar::metadata {
namespace {

// Our own reply code for "the deadline passed first"; no ZooKeeper code is this low.
constexpr int kRcDeadline = -100000;
// Rounds of put()'s create-else-set loop lost to other sessions before giving up.
constexpr int kMaxPutRaces = 16;
// Delay before retrying to open a session after zookeeper_init refused (after an expiry).
constexpr std::chrono::milliseconds kReopenDelay{1000};
// Pause before repeating a request whose connection dropped while it was in flight.
constexpr std::chrono::milliseconds kRetryPause{100};

// Everything the C client hands back for one request.
struct ZkReply {
  int rc = ZOK;
  std::string value;                  // get
  std::string path;                   // create: the path as created (sequential suffix)
  Stat stat;                          // get, exists, set, create
  std::vector<std::string> children;  // children
  std::string detail;                 // extra error text (zookeeper_init's errno)
};

ZkReply reply_with(int rc, std::string detail = {}) {
  ZkReply reply;
  reply.rc = rc;
  reply.detail = std::move(detail);
  return reply;
}

Stat to_stat(const struct ::Stat& s) {
  Stat stat;
  stat.version = s.version;
  stat.creation_time_ms = s.ctime;
  stat.modification_time_ms = s.mtime;
  stat.ephemeral_owner = s.ephemeralOwner;
  stat.ephemeral = s.ephemeralOwner != 0;
  return stat;
}

// Hands exactly one ZkReply to one awaiting coroutine: the first fill wins, later ones are
// dropped. Thread-safe; the winner's delivery posts to the awaiting coroutine's executor.
class ReplySlot {
 public:
  explicit ReplySlot(std::function<void(ZkReply)> deliver) : deliver_(std::move(deliver)) {}

  void fill(ZkReply reply) {
    std::function<void(ZkReply)> deliver;
    {
      std::lock_guard lock(mu_);
      deliver.swap(deliver_);
    }
    if (deliver) deliver(std::move(reply));
  }

 private:
  std::mutex mu_;
  std::function<void(ZkReply)> deliver_;  // empty once filled
};

class Session;
class ZooKeeperStore;

// One request in flight: the `data` pointer of the C completion. Owned by
// Session::pending_ until the completion (or the drain after close) takes it out.
struct PendingOp {
  Session* session;
  std::shared_ptr<ReplySlot> slot;
};

// C callbacks (defined at the end of the file). Watchers get the Session* as context;
// completions get a PendingOp*, or nothing for fire-and-forget watch arming.
void session_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx);
void data_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx);
void child_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx);
void on_data_reply(int rc, const char* value, int len, const struct ::Stat* stat,
                   const void* data);
void on_stat_reply(int rc, const struct ::Stat* stat, const void* data);
void on_create_reply(int rc, const char* path, const struct ::Stat* stat, const void* data);
void on_void_reply(int rc, const void* data);
void on_children_reply(int rc, const struct String_vector* names, const void* data);
void on_arm_stat_reply(int, const struct ::Stat*, const void*) {}
void on_arm_children_reply(int, const struct String_vector*, const void*) {}
void zk_client_log(const char* message);

// Where a Session is in its life. Guarded by ZooKeeperStore::mu_.
enum class SessionState {
  kConnecting,    // zookeeper_init done, never connected yet
  kConnected,
  kDisconnected,  // was connected; the C client is reconnecting, the session may survive
  kExpired,       // the server ended the session; the janitor replaces it
  kClosed,        // handle closed (or being closed): ignore everything from it
};

// One zhandle_t and the ZooKeeper session behind it. Created on the janitor thread,
// used from any thread, closed on the janitor thread.
class Session {
 public:
  using Call = std::function<int(zhandle_t*, PendingOp*)>;

  Session(ZooKeeperStore* store, bool after_expiry)
      : store_(store), after_expiry_(after_expiry) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // zookeeper_init (resolves names: may block). Janitor thread only, once.
  Status init(const std::string& connect_string, std::chrono::milliseconds session_timeout) {
    errno = 0;
    zhandle_t* zh = zookeeper_init2(connect_string.c_str(), session_watcher,
                                    static_cast<int>(session_timeout.count()), nullptr, this,
                                    ZOO_NO_LOG_CLIENTENV, zk_client_log);
    if (zh == nullptr) {
      return Status(Error::kBackend, fmt::format("zookeeper_init({}) failed: {}",
                                                 connect_string, std::strerror(errno)));
    }
    install_handle(zh);
    return Status::OK();
  }

  // Makes `zh` the handle requests go to. Called by init once zookeeper_init returned, and
  // by the session watcher on the first connection: the C client may connect (and we may
  // answer connect waiters, who then issue requests) before zookeeper_init has returned.
  // Idempotent; the session watcher calls it under ZooKeeperStore::mu_, so a session
  // being retired (state kClosed first, then close_handle) never gets its handle back.
  void install_handle(zhandle_t* zh) {
    std::unique_lock lock(handle_mu_);
    if (zh_ == nullptr && !handle_closed_) zh_ = zh;
  }

  // Issues one request: `call` runs with the handle and the PendingOp to pass as the
  // completion's data, and returns the C function's result. Any thread. The slot is
  // filled exactly once (by the completion, or here if the C client refused the call).
  void submit(std::shared_ptr<ReplySlot> slot, const Call& call) {
    auto owned = std::make_unique<PendingOp>(PendingOp{this, slot});
    PendingOp* op = owned.get();
    {
      std::lock_guard lock(ops_mu_);
      pending_.emplace(op, std::move(owned));
    }
    int rc;
    {
      std::shared_lock lock(handle_mu_);
      rc = zh_ == nullptr ? ZINVALIDSTATE : call(zh_, op);
    }
    if (rc == ZOK) return;
    // The C client registers no completion when it refuses a call up front; it may have
    // registered one before a ZMARSHALLINGERROR, so that op stays until close drains it.
    if (rc != ZMARSHALLINGERROR) take(op);
    slot->fill(reply_with(rc));
  }

  // Fire-and-forget watch arming (data: exists watch, which also sees creation; children).
  // Any thread, including the completion thread inside a watcher.
  void arm_data_watch(const std::string& path) {
    std::shared_lock lock(handle_mu_);
    if (zh_ != nullptr) {
      zoo_awexists(zh_, path.c_str(), data_watcher, this, on_arm_stat_reply, nullptr);
    }
  }
  void arm_child_watch(const std::string& path) {
    std::shared_lock lock(handle_mu_);
    if (zh_ != nullptr) {
      zoo_awget_children(zh_, path.c_str(), child_watcher, this, on_arm_children_reply,
                         nullptr);
    }
  }

  // Completion of `op` (completion thread, or the closing thread during zookeeper_close).
  void complete(PendingOp* op, ZkReply reply) {
    std::unique_ptr<PendingOp> owned = take(op);
    if (owned) owned->slot->fill(std::move(reply));
  }

  // Closes the handle: blocks until the C client's threads are joined (and, when
  // connected, until the server acknowledged the close, which removes our ephemerals).
  // Requests still without an answer complete with `rc`. Janitor thread only; never
  // from the completion thread. Idempotent.
  void close_handle(int rc) {
    zhandle_t* zh;
    {
      std::unique_lock lock(handle_mu_);
      zh = std::exchange(zh_, nullptr);
      handle_closed_ = true;
    }
    if (zh != nullptr) zookeeper_close(zh);
    std::unordered_map<PendingOp*, std::unique_ptr<PendingOp>> left;
    {
      std::lock_guard lock(ops_mu_);
      left.swap(pending_);
    }
    for (auto& [op, owned] : left) owned->slot->fill(reply_with(rc));
  }

  ZooKeeperStore* store() const { return store_; }
  bool after_expiry() const { return after_expiry_; }

  // Guarded by ZooKeeperStore::mu_.
  SessionState state = SessionState::kConnecting;

 private:
  std::unique_ptr<PendingOp> take(PendingOp* op) {
    std::lock_guard lock(ops_mu_);
    auto it = pending_.find(op);
    if (it == pending_.end()) return nullptr;
    std::unique_ptr<PendingOp> owned = std::move(it->second);
    pending_.erase(it);
    return owned;
  }

  ZooKeeperStore* const store_;
  const bool after_expiry_;  // opened to replace an expired session

  std::shared_mutex handle_mu_;  // shared: calls on zh_; exclusive: taking zh_ to close it
  zhandle_t* zh_ = nullptr;
  bool handle_closed_ = false;  // guarded by handle_mu_

  std::mutex ops_mu_;
  std::unordered_map<PendingOp*, std::unique_ptr<PendingOp>> pending_;
};


class ZooKeeperStore final : public MetadataStore {
 public:
  // `connect_string` is what the C client takes: hosts, then the chroot if any.
  ZooKeeperStore(std::string connect_string, StoreOptions options)
      : connect_string_(std::move(connect_string)),
        options_(options),
        log_(log::Logger("metadata").with("zk", connect_string_)),
        work_(asio::make_work_guard(janitor_)),
        reopen_timer_(janitor_),
        disconnect_timer_(janitor_) {
    static std::once_flag quiet_client;
    // The C client logs every connection attempt to stderr at INFO by default. Keep only
    // its warnings and errors, routed to our logger at debug level (zk_client_log): the
    // store logs session changes itself.
    std::call_once(quiet_client, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_WARN); });
    janitor_thread_ = std::thread([this] { janitor_.run(); });
  }

  // Closes the session if close() was not awaited. Blocks the calling thread for as
  // long as zookeeper_close takes: milliseconds with a healthy server, up to ~4.5 s when a
  // connected server stopped answering. Await close() first on event loops.
  ~ZooKeeperStore() override {
    std::shared_ptr<Session> session = begin_close().value_or(nullptr);
    asio::post(janitor_, [this, session] {
      reopen_timer_.cancel();
      disconnect_timer_.cancel();
      if (session) retire(*session, ZCLOSING);
    });
    work_.reset();
    janitor_thread_.join();
  }

  // Opens the first session and waits (operation_timeout) until it is connected.
  Task<Status> connect() {
    StartFn start = [this](std::shared_ptr<ReplySlot> slot) {
      {
        std::lock_guard lock(mu_);
        connect_waiters_.push_back(std::move(slot));
      }
      asio::post(janitor_, [this] { open_session(/*after_expiry=*/false); });
    };
    ZkReply reply = co_await with_deadline(start);
    if (reply.rc == ZOK) co_return Status::OK();
    if (reply.rc == kRcDeadline) {
      co_return Status(Error::kTimeout,
                       fmt::format("no ZooKeeper server of {} answered within {} ms",
                                   connect_string_, options_.operation_timeout.count()));
    }
    if (!reply.detail.empty()) co_return Status(Error::kBackend, reply.detail);
    co_return to_status(reply.rc, "connect", connect_string_);
  }

  Task<Result<std::optional<GetResult>>> get(std::string path) override {
    if (Status st = validate_path(path); !st.ok()) co_return st;
    note_data_interest(path);
    Session::Call call = [&path](zhandle_t* zh, PendingOp* op) {
      return zoo_awget(zh, path.c_str(), data_watcher, op->session, on_data_reply, op);
    };
    ZkReply reply = co_await request_idempotent(call);
    if (reply.rc == ZNONODE) {
      // A failed read sets no watch: watch for the creation instead.
      co_await watch_creation(path);
      co_return std::optional<GetResult>();
    }
    if (reply.rc != ZOK) co_return to_status(reply.rc, "get", path);
    co_return std::optional<GetResult>(GetResult{std::move(reply.value), reply.stat});
  }

  Task<Result<PutResult>> put(std::string path, std::string value,
                              PutOptions options) override {
    if (Status st = validate_path(path); !st.ok()) co_return st;
    if (value.size() > options_.max_value_size) {
      co_return Status(Error::kTooLarge,
                       fmt::format("put {}: value of {} bytes exceeds the limit of {} bytes",
                                   path, value.size(), options_.max_value_size));
    }
    int mode = options.ephemeral
                   ? (options.sequential ? ZOO_EPHEMERAL_SEQUENTIAL : ZOO_EPHEMERAL)
                   : (options.sequential ? ZOO_PERSISTENT_SEQUENTIAL : ZOO_PERSISTENT);
    if (options.sequential) {
      // A new node each time; expected_version has nothing to compare with.
      ZkReply reply = co_await create(path, value, mode);
      if (reply.rc != ZOK) co_return to_status(reply.rc, "create", path);
      note_data_interest(reply.path);
      arm_data_watch(reply.path);
      co_return PutResult{std::move(reply.path), reply.stat};
    }
    // Watch before writing, so that this session's listeners see its own write.
    note_data_interest(path);
    arm_data_watch(path);
    if (options.expected_version == -1) {
      ZkReply reply = co_await create(path, value, mode);
      if (reply.rc != ZOK) co_return to_status(reply.rc, "create", path);
      co_return PutResult{std::move(reply.path), reply.stat};
    }
    if (options.expected_version) {
      int64_t expected = *options.expected_version;
      if (expected < -1 || expected > INT32_MAX) {
        co_return Status(Error::kBadVersion,
                         fmt::format("put {}: no node has version {}", path, expected));
      }
      ZkReply reply = co_await set(path, value, static_cast<int>(expected));
      if (reply.rc != ZOK) co_return to_status(reply.rc, "set", path);
      co_return PutResult{path, reply.stat};
    }
    // Create or overwrite: another session may create or delete the node between our
    // two requests; go round again then.
    for (int round = 0; round < kMaxPutRaces; ++round) {
      ZkReply created = co_await create(path, value, mode);
      if (created.rc == ZOK) co_return PutResult{std::move(created.path), created.stat};
      if (created.rc != ZNODEEXISTS) co_return to_status(created.rc, "create", path);
      ZkReply updated = co_await set(path, value, -1);
      if (updated.rc == ZOK) co_return PutResult{path, updated.stat};
      if (updated.rc != ZNONODE) co_return to_status(updated.rc, "set", path);
    }
    co_return Status(Error::kBadVersion,
                     fmt::format("put {}: the node kept being created and deleted by others",
                                 path));
  }

  Task<Status> remove(std::string path, std::optional<int64_t> expected_version) override {
    if (Status st = validate_path(path); !st.ok()) co_return st;
    int version = -1;  // ZooKeeper's "any version"
    if (expected_version) {
      if (*expected_version < 0 || *expected_version > INT32_MAX) {
        co_return Status(Error::kBadVersion,
                         fmt::format("remove {}: expected version {} cannot match a node",
                                     path, *expected_version));
      }
      version = static_cast<int>(*expected_version);
    }
    note_data_interest(path);
    arm_data_watch(path);
    Session::Call call = [&path, version](zhandle_t* zh, PendingOp* op) {
      return zoo_adelete(zh, path.c_str(), version, on_void_reply, op);
    };
    ZkReply reply = co_await request(call);
    // The connection dropped with the delete in flight: it may have been applied. Look.
    const auto deadline = std::chrono::steady_clock::now() + options_.operation_timeout;
    while (reply.rc == ZCONNECTIONLOSS && std::chrono::steady_clock::now() < deadline) {
      co_await pause_before_retry();
      ZkReply there = co_await read_node(path);
      if (there.rc == ZNONODE) co_return Status::OK();
      if (there.rc != ZOK) continue;
      reply = co_await request(call);
    }
    if (reply.rc != ZOK) co_return to_status(reply.rc, "remove", path);
    co_return Status::OK();
  }

  Task<Result<std::vector<std::string>>> children(std::string path) override {
    if (Status st = validate_path(path); !st.ok()) co_return st;
    if (note_child_interest(path)) {
      // Pair the child watch with a data watch: a child watch dies with its node, the
      // data watch sees the node come back and then re-arms the child watch.
      arm_data_watch(path);
    }
    Session::Call call = [&path](zhandle_t* zh, PendingOp* op) {
      return zoo_awget_children(zh, path.c_str(), child_watcher, op->session,
                                on_children_reply, op);
    };
    ZkReply reply = co_await request_idempotent(call);
    if (reply.rc == ZNONODE) {
      co_await watch_creation(path);
      co_return std::vector<std::string>();
    }
    if (reply.rc != ZOK) co_return to_status(reply.rc, "children", path);
    std::sort(reply.children.begin(), reply.children.end());
    co_return std::move(reply.children);
  }

  Task<Result<bool>> exists(std::string path) override {
    if (Status st = validate_path(path); !st.ok()) co_return st;
    note_data_interest(path);
    Session::Call call = [&path](zhandle_t* zh, PendingOp* op) {
      return zoo_awexists(zh, path.c_str(), data_watcher, op->session, on_stat_reply, op);
    };
    ZkReply reply = co_await request_idempotent(call);
    if (reply.rc == ZOK) co_return true;
    if (reply.rc == ZNONODE) co_return false;
    co_return to_status(reply.rc, "exists", path);
  }

  ListenerId add_listener(Executor executor,
                          std::function<void(const Notification&)> listener) override {
    ListenerRegistry::Added added = listeners_.add(std::move(executor), std::move(listener));
    // Watches that fired while nobody listened were not re-armed: arm them again.
    if (added.first) {
      if (std::shared_ptr<Session> session = current_session()) rearm_all(*session);
    }
    return added.id;
  }

  ListenerId add_session_listener(Executor executor,
                                  std::function<void(SessionEvent)> listener) override {
    return listeners_.add_session(std::move(executor), std::move(listener));
  }

  // Once this returns, the listener is not invoked again unless a call already started.
  void remove_listener(ListenerId id) override { listeners_.remove(id); }

  int64_t session_id() const override { return session_id_.load(); }
  // As negotiated at the last connect (the servers bound it by their min/maxSessionTimeout);
  // before the first, the timeout asked for.
  std::chrono::milliseconds session_timeout() const override {
    const int64_t negotiated = negotiated_ms_.load();
    return negotiated > 0 ? std::chrono::milliseconds(negotiated) : options_.session_timeout;
  }

  Task<Status> close() override {
    std::optional<std::shared_ptr<Session>> closing = begin_close();
    if (!closing) co_return Status::OK();  // closed before
    std::shared_ptr<Session> session = std::move(*closing);
    StartFn start = [this, &session](std::shared_ptr<ReplySlot> slot) {
      asio::post(janitor_, [this, session, slot] {
        reopen_timer_.cancel();
        if (session) retire(*session, ZCLOSING);
        slot->fill(reply_with(ZOK));
      });
    };
    ZkReply reply = co_await with_deadline(start);
    if (reply.rc == kRcDeadline) {
      co_return Status(Error::kTimeout,
                       fmt::format("closing the session did not finish within {} ms",
                                   options_.operation_timeout.count()));
    }
    log_.info("session closed");
    co_return Status::OK();
  }

  // --- From the C client's threads ---

  // Session event of `session` (zh is its handle, valid during the call).
  void on_session_state(Session* session, zhandle_t* zh, int state) {
    std::vector<std::shared_ptr<ReplySlot>> waiters;
    std::optional<SessionEvent> event;
    bool rearm = false;
    bool expired = false;
    int64_t id = 0;
    int new_timeout = 0;  // a session timeout the servers gave that differs from the last
    {
      std::lock_guard lock(mu_);
      if (session->state == SessionState::kClosed || closed_) return;
      if (state == ZOO_CONNECTED_STATE) {
        const clientid_t* client = zoo_client_id(zh);
        id = client != nullptr ? client->client_id : 0;
        session_id_ = id;
        const int timeout = zoo_recv_timeout(zh);
        // Told once per value, not at every reconnect.
        if (timeout > 0 && negotiated_ms_.exchange(timeout) != timeout) new_timeout = timeout;
        session->install_handle(zh);
        if (session->state == SessionState::kConnecting) {
          if (session->after_expiry()) event = SessionEvent::kSessionReestablished;
          rearm = session->after_expiry();
        } else if (session->state == SessionState::kDisconnected) {
          event = SessionEvent::kReconnected;
          rearm = true;
        }
        session->state = SessionState::kConnected;
        waiters.swap(connect_waiters_);
      } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE ||
                 state == ZOO_NOTCONNECTED_STATE) {
        if (session->state == SessionState::kConnected) {
          session->state = SessionState::kDisconnected;
          event = SessionEvent::kConnectionLost;
        }
      } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
        if (session->state != SessionState::kExpired) {
          session->state = SessionState::kExpired;
          event = SessionEvent::kSessionLost;
          expired = true;
        }
      }
    }
    if (new_timeout > 0 && new_timeout != options_.session_timeout.count()) {
      log_.warn(
          "session {:#x}: the servers gave a session timeout of {} ms instead of the {} ms "
          "asked for (their minSessionTimeout/maxSessionTimeout); using theirs",
          id, new_timeout, options_.session_timeout.count());
    }
    if (!event) {
      if (state == ZOO_CONNECTED_STATE) log_.info("session {:#x} connected", id);
    } else if (*event == SessionEvent::kSessionLost) {
      log_.warn("session lost ({}); opening a new one",
                state == ZOO_AUTH_FAILED_STATE ? "authentication failed" : "expired");
    } else if (*event == SessionEvent::kConnectionLost) {
      log_.warn("connection lost; the C client is reconnecting");
    } else {
      log_.info("session {:#x} {}", id, to_string(*event));
    }
    for (auto& slot : waiters) slot->fill(reply_with(ZOK));
    if (event) notify_session(*event);
    if (rearm) rearm_all(*session);
    if (expired) asio::post(janitor_, [this, session] { replace_session(session); });
    if (event == SessionEvent::kConnectionLost) {
      asio::post(janitor_, [this, session] { start_disconnect_timer(session); });
    } else if (event == SessionEvent::kReconnected) {
      asio::post(janitor_, [this] { disconnect_timer_.cancel(); });
    }
  }

  // A client cut off from the ensemble only learns that its session expired when it
  // reconnects; meanwhile the servers may have expired it and someone else may own what its
  // ephemeral nodes claimed. So after session_timeout without a connection the session is
  // treated as lost here too, as Pulsar's session watcher does: listeners hear
  // kSessionLost (owners stop at once), the handle is closed and a new session opened.
  void start_disconnect_timer(Session* session) {
    disconnect_timer_.expires_after(session_timeout());
    disconnect_timer_.async_wait([this, session](const boost::system::error_code& ec) {
      if (ec) return;
      {
        std::lock_guard lock(mu_);
        if (closed_ || session_.get() != session ||
            session->state != SessionState::kDisconnected) {
          return;
        }
        session->state = SessionState::kExpired;
      }
      log_.warn(
          "no connection for the session timeout ({} ms): session treated as lost; "
          "opening a new one",
          session_timeout().count());
      notify_session(SessionEvent::kSessionLost);
      replace_session(session);
    });
  }

  // A data watch (exists/get) fired.
  void on_data_event(Session* session, int type, const std::string& path) {
    NotificationType kind;
    if (type == ZOO_CREATED_EVENT) {
      kind = NotificationType::kCreated;
    } else if (type == ZOO_CHANGED_EVENT) {
      kind = NotificationType::kModified;
    } else if (type == ZOO_DELETED_EVENT) {
      kind = NotificationType::kDeleted;
    } else {
      return;  // session events reach every watcher: the session watcher handles them
    }
    bool rearm_data = false;
    bool rearm_child = false;
    {
      std::lock_guard lock(mu_);
      if (session->state == SessionState::kClosed || closed_) return;
      if (listeners_.has_listeners()) {
        bool children = child_watched_.count(path) > 0;
        rearm_data = children || data_watched_.count(path) > 0;
        rearm_child = children && kind == NotificationType::kCreated;
      }
    }
    notify(Notification{kind, path});
    if (rearm_data) session->arm_data_watch(path);
    if (rearm_child) session->arm_child_watch(path);
  }

  // A child watch fired. When the node itself is deleted its paired data watch reports
  // that and re-arms the child watch once the node is back.
  void on_child_event(Session* session, int type, const std::string& path) {
    if (type != ZOO_CHILD_EVENT) return;
    bool rearm = false;
    {
      std::lock_guard lock(mu_);
      if (session->state == SessionState::kClosed || closed_) return;
      rearm = listeners_.has_listeners() && child_watched_.count(path) > 0;
    }
    notify(Notification{NotificationType::kChildrenChanged, path});
    if (rearm) session->arm_child_watch(path);
  }

 private:
  // --- Requests ---

  // Starts an operation: receives the slot its reply goes to.
  using StartFn = std::function<void(std::shared_ptr<ReplySlot>)>;

  // Coroutine style, forced by GCC 12: a lambda converted to a std::function parameter
  // inside a co_await expression is destroyed twice. Callables passed to coroutines here
  // are named std::function locals, passed by reference (they outlive the co_await).

  // Runs one request on the current session, bounded by the operation deadline. `call`
  // runs before the first suspension.
  Task<ZkReply> request(const Session::Call& call) {
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mu_);
      if (closed_) co_return reply_with(ZCLOSING);
      if (session_ && session_->state != SessionState::kExpired &&
          session_->state != SessionState::kClosed) {
        session = session_;
      }
    }
    if (!session) co_return reply_with(ZSESSIONEXPIRED);
    StartFn start = [&session, &call](std::shared_ptr<ReplySlot> slot) {
      session->submit(std::move(slot), call);
    };
    ZkReply reply = co_await with_deadline(start);
    co_return reply;
  }

  // Awaits a reply that `start` arranges to put into the slot it is given; the slot gets
  // kRcDeadline if nothing arrived within operation_timeout. The coroutine resumes on its
  // own executor.
  Task<ZkReply> with_deadline(const StartFn& start) {
    auto executor = co_await asio::this_coro::executor;
    asio::steady_timer timer(executor, options_.operation_timeout);
    std::function<void(std::function<void(ZkReply)>)> initiate =
        [&timer, &start](std::function<void(ZkReply)> deliver) {
          auto slot = std::make_shared<ReplySlot>(std::move(deliver));
          timer.async_wait([slot](const boost::system::error_code& ec) {
            if (!ec) slot->fill(reply_with(kRcDeadline));
          });
          start(std::move(slot));
        };
    ZkReply reply = co_await await_callback<ZkReply>(initiate);
    timer.cancel();  // on this coroutine's executor, as async_wait was
    co_return reply;
  }

  // `path` and `value` must outlive the call (the caller's named locals).
  Task<ZkReply> create(const std::string& path, const std::string& value, int mode) {
    Session::Call call = [&path, &value, mode](zhandle_t* zh, PendingOp* op) {
      return zoo_acreate2(zh, path.c_str(), value.data(), static_cast<int>(value.size()),
                          &ZOO_OPEN_ACL_UNSAFE, mode, on_create_reply, op);
    };
    ZkReply reply = co_await request(call);
    // The connection dropped with the create in flight: it may have been applied. A node
    // with our value (and, if ephemeral, our session) is ours; sequential names cannot be
    // told apart, so those report the loss.
    const bool sequential = mode == ZOO_PERSISTENT_SEQUENTIAL || mode == ZOO_EPHEMERAL_SEQUENTIAL;
    const bool ephemeral = mode == ZOO_EPHEMERAL || mode == ZOO_EPHEMERAL_SEQUENTIAL;
    const auto deadline = std::chrono::steady_clock::now() + options_.operation_timeout;
    while (!sequential && reply.rc == ZCONNECTIONLOSS &&
           std::chrono::steady_clock::now() < deadline) {
      co_await pause_before_retry();
      ZkReply there = co_await read_node(path);
      if (there.rc == ZNONODE) {
        reply = co_await request(call);
      } else if (there.rc == ZOK) {
        const bool ours = there.value == value &&
                          (!ephemeral || there.stat.ephemeral_owner == session_id_.load());
        if (!ours) co_return reply_with(ZNODEEXISTS);
        there.path = path;
        co_return there;
      }
    }
    co_return reply;
  }

  Task<ZkReply> set(const std::string& path, const std::string& value, int version) {
    Session::Call call = [&path, &value, version](zhandle_t* zh, PendingOp* op) {
      return zoo_aset(zh, path.c_str(), value.data(), static_cast<int>(value.size()), version,
                      on_stat_reply, op);
    };
    ZkReply reply = co_await request(call);
    // The connection dropped with the set in flight: it may have been applied. The node at
    // the next version with our value is our write; at the expected version, try again.
    const auto deadline = std::chrono::steady_clock::now() + options_.operation_timeout;
    while (reply.rc == ZCONNECTIONLOSS && std::chrono::steady_clock::now() < deadline) {
      co_await pause_before_retry();
      ZkReply there = co_await read_node(path);
      if (there.rc == ZNONODE) co_return there;
      if (there.rc != ZOK) continue;
      if (there.value == value && (version == -1 || there.stat.version == version + 1)) {
        co_return there;
      }
      if (version != -1 && there.stat.version != version) co_return reply_with(ZBADVERSION);
      reply = co_await request(call);
    }
    co_return reply;
  }

  // A read that is safe to repeat: on a dropped connection it is sent again (the C client
  // queues it until it has reconnected), until the operation deadline.
  Task<ZkReply> request_idempotent(const Session::Call& call) {
    ZkReply reply = co_await request(call);
    const auto deadline = std::chrono::steady_clock::now() + options_.operation_timeout;
    while (reply.rc == ZCONNECTIONLOSS && std::chrono::steady_clock::now() < deadline) {
      co_await pause_before_retry();
      reply = co_await request(call);
    }
    co_return reply;
  }

  // The node's value and stat, without a watch (retried over connection loss).
  Task<ZkReply> read_node(const std::string& path) {
    Session::Call call = [&path](zhandle_t* zh, PendingOp* op) {
      return zoo_aget(zh, path.c_str(), 0, on_data_reply, op);
    };
    ZkReply reply = co_await request_idempotent(call);
    co_return reply;
  }

  // A short pause between retries after a connection loss (the client is reconnecting).
  Task<void> pause_before_retry() {
    auto executor = co_await asio::this_coro::executor;
    asio::steady_timer timer(executor, kRetryPause);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  // After a read found no node: set an exists watch so its creation is notified. If the
  // node appeared in between, the creation would be missed: report it now.
  Task<void> watch_creation(const std::string& path) {
    Session::Call call = [&path](zhandle_t* zh, PendingOp* op) {
      return zoo_awexists(zh, path.c_str(), data_watcher, op->session, on_stat_reply, op);
    };
    ZkReply reply = co_await request_idempotent(call);
    if (reply.rc == ZOK) notify(Notification{NotificationType::kCreated, path});
  }

  Status to_status(int rc, std::string_view op, std::string_view path) const {
    switch (rc) {
      case ZOK:
        return Status::OK();
      case ZNONODE:
        return Status(Error::kNotFound, fmt::format("{} {}: no such node", op, path));
      case ZBADVERSION:
        return Status(Error::kBadVersion, fmt::format("{} {}: version mismatch", op, path));
      case ZNODEEXISTS:
        return Status(Error::kBadVersion, fmt::format("{} {}: node exists", op, path));
      case ZNOTEMPTY:
        return Status(Error::kNotEmpty, fmt::format("{} {}: node has children", op, path));
      case ZCONNECTIONLOSS:
      case ZOPERATIONTIMEOUT:
        return Status(Error::kConnectionLost,
                      fmt::format("{} {}: {}", op, path, zerror(rc)));
      case ZSESSIONEXPIRED:
        return Status(Error::kSessionLost,
                      fmt::format("{} {}: session expired", op, path));
      case ZINVALIDSTATE:
      case ZCLOSING:
        if (is_closed()) {
          return Status(Error::kClosed, fmt::format("{} {}: store closed", op, path));
        }
        return Status(Error::kSessionLost,
                      fmt::format("{} {}: no session (expired, a new one is opening)", op,
                                  path));
      case kRcDeadline:
        return Status(Error::kTimeout, fmt::format("{} {}: no answer within {} ms", op, path,
                                                   options_.operation_timeout.count()));
      default:
        return Status(Error::kBackend,
                      fmt::format("{} {}: {} (ZooKeeper error {})", op, path, zerror(rc), rc));
    }
  }

  bool is_closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }

  // --- Watches and notifications ---

  void note_data_interest(const std::string& path) {
    std::lock_guard lock(mu_);
    data_watched_.insert(path);
  }

  // True when the path was not child-watched before.
  bool note_child_interest(const std::string& path) {
    std::lock_guard lock(mu_);
    return child_watched_.insert(path).second;
  }

  void arm_data_watch(const std::string& path) {
    std::shared_ptr<Session> session = current_session();
    if (session) session->arm_data_watch(path);
  }

  std::shared_ptr<Session> current_session() const {
    std::lock_guard lock(mu_);
    return session_;
  }

  // Sets every watch again on `session` (after a reconnect some re-arms may have been
  // lost; after a new session none of the old watches exist).
  void rearm_all(Session& session) {
    std::vector<std::string> data;
    std::vector<std::string> children;
    {
      std::lock_guard lock(mu_);
      if (!listeners_.has_listeners()) return;  // add_listener re-arms
      data.assign(data_watched_.begin(), data_watched_.end());
      children.assign(child_watched_.begin(), child_watched_.end());
    }
    for (const auto& path : data) session.arm_data_watch(path);
    for (const auto& path : children) {
      session.arm_data_watch(path);
      session.arm_child_watch(path);
    }
  }

  void notify(const Notification& notification) { listeners_.notify(notification); }
  void notify_session(SessionEvent event) { listeners_.notify_session(event); }

  // --- Session lifecycle (janitor thread) ---

  // Marks the store closed and stops notifications. Returns the session to close (null
  // when none was opened), or nullopt when the store was closed before.
  std::optional<std::shared_ptr<Session>> begin_close() {
    std::vector<std::shared_ptr<ReplySlot>> waiters;
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mu_);
      if (closed_) return std::nullopt;
      closed_ = true;
      session = session_;
      waiters.swap(connect_waiters_);
      listeners_.close();
    }
    for (auto& slot : waiters) slot->fill(reply_with(ZCLOSING));
    return session;
  }

  void open_session(bool after_expiry) {
    auto session = std::make_shared<Session>(this, after_expiry);
    {
      // Installed before zookeeper_init: its first event may come before init returns.
      std::lock_guard lock(mu_);
      if (closed_) return;
      session_ = session;
    }
    Status st = session->init(connect_string_, options_.session_timeout);
    if (st.ok()) return;
    log_.error("cannot open a session: {}", st.message());
    std::vector<std::shared_ptr<ReplySlot>> waiters;
    {
      std::lock_guard lock(mu_);
      session->state = SessionState::kClosed;
      waiters.swap(connect_waiters_);
      if (closed_) return;
    }
    for (auto& slot : waiters) slot->fill(reply_with(ZSYSTEMERROR, st.message()));
    if (after_expiry) {
      reopen_timer_.expires_after(kReopenDelay);
      reopen_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && !is_closed()) open_session(/*after_expiry=*/true);
      });
    }
  }

  void replace_session(Session* expired) {
    std::shared_ptr<Session> old;
    {
      std::lock_guard lock(mu_);
      if (closed_ || session_.get() != expired) return;
      old = session_;
    }
    retire(*old, ZSESSIONEXPIRED);
    open_session(/*after_expiry=*/true);
  }

  // Closes `session`'s handle; its unanswered requests complete with `rc`.
  void retire(Session& session, int rc) {
    {
      std::lock_guard lock(mu_);
      session.state = SessionState::kClosed;
    }
    session.close_handle(rc);
  }

  const std::string connect_string_;
  const StoreOptions options_;
  const log::Logger log_;

  mutable std::mutex mu_;
  bool closed_ = false;                                         // guarded by mu_
  std::shared_ptr<Session> session_;                            // guarded by mu_
  std::vector<std::shared_ptr<ReplySlot>> connect_waiters_;     // guarded by mu_
  ListenerRegistry listeners_;  // its own lock, taken after mu_ (never the other way)
  std::set<std::string> data_watched_;   // paths whose data watch we keep; guarded by mu_
  std::set<std::string> child_watched_;  // paths whose child watch we keep; guarded by mu_
  std::atomic<int64_t> session_id_{0};
  std::atomic<int64_t> negotiated_ms_{0};  // the session timeout the servers gave; 0: none yet

  // The janitor: a private loop on its own thread. Declared last but the thread, so it
  // is stopped (joined in the destructor) before the state above goes away.
  asio::io_context janitor_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::steady_timer reopen_timer_;  // janitor thread only
  // Runs while disconnected: at session_timeout the session is treated as lost (janitor
  // thread only).
  asio::steady_timer disconnect_timer_;
  std::thread janitor_thread_;
};

// --- C callbacks ---

void session_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx) {
  if (type != ZOO_SESSION_EVENT) return;  // node watches use data_watcher/child_watcher
  auto* session = static_cast<Session*>(ctx);
  session->store()->on_session_state(session, zh, state);
}

void data_watcher(zhandle_t*, int type, int, const char* path, void* ctx) {
  if (type == ZOO_SESSION_EVENT || path == nullptr) return;
  auto* session = static_cast<Session*>(ctx);
  session->store()->on_data_event(session, type, path);
}

void child_watcher(zhandle_t*, int type, int, const char* path, void* ctx) {
  if (type == ZOO_SESSION_EVENT || path == nullptr) return;
  auto* session = static_cast<Session*>(ctx);
  session->store()->on_child_event(session, type, path);
}

PendingOp* pending(const void* data) {
  return static_cast<PendingOp*>(const_cast<void*>(data));
}

void on_data_reply(int rc, const char* value, int len, const struct ::Stat* stat,
                   const void* data) {
  PendingOp* op = pending(data);
  ZkReply reply = reply_with(rc);
  if (rc == ZOK) {
    if (value != nullptr && len > 0) reply.value.assign(value, static_cast<size_t>(len));
    if (stat != nullptr) reply.stat = to_stat(*stat);
  }
  op->session->complete(op, std::move(reply));
}

void on_stat_reply(int rc, const struct ::Stat* stat, const void* data) {
  PendingOp* op = pending(data);
  ZkReply reply = reply_with(rc);
  if (rc == ZOK && stat != nullptr) reply.stat = to_stat(*stat);
  op->session->complete(op, std::move(reply));
}

void on_create_reply(int rc, const char* path, const struct ::Stat* stat, const void* data) {
  PendingOp* op = pending(data);
  ZkReply reply = reply_with(rc);
  if (rc == ZOK) {
    if (path != nullptr) reply.path = path;
    if (stat != nullptr) reply.stat = to_stat(*stat);
  }
  op->session->complete(op, std::move(reply));
}

void on_void_reply(int rc, const void* data) {
  PendingOp* op = pending(data);
  op->session->complete(op, reply_with(rc));
}

void on_children_reply(int rc, const struct String_vector* names, const void* data) {
  PendingOp* op = pending(data);
  ZkReply reply = reply_with(rc);
  if (rc == ZOK && names != nullptr) {
    reply.children.reserve(static_cast<size_t>(names->count));
    for (int32_t i = 0; i < names->count; ++i) reply.children.emplace_back(names->data[i]);
  }
  op->session->complete(op, std::move(reply));
}

// The C client's own log lines (warnings and errors: reconnect attempts and the like).
void zk_client_log(const char* message) {
  static const log::Logger logger = log::Logger("metadata").with("source", "zookeeper-c");
  std::string_view text(message != nullptr ? message : "");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  logger.debug("{}", text);
}

// "host:port[,host:port...]": each entry with a host and a numeric port.
bool valid_hosts(std::string_view hosts) {
  if (hosts.empty()) return false;
  size_t start = 0;
  while (start <= hosts.size()) {
    size_t comma = hosts.find(',', start);
    std::string_view entry =
        hosts.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                             : comma - start);
    size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    std::string_view port = entry.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() ||
        value == 0 || value > 65535) {
      return false;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return true;
}

// Creates `chroot` and its missing parents (persistent, empty) through `root`.
Task<Status> create_chroot(MetadataStore& root, const std::string& chroot) {
  size_t next = 1;
  while (true) {
    size_t slash = chroot.find('/', next);
    std::string prefix = chroot.substr(0, slash);
    PutOptions options;
    options.expected_version = -1;
    Result<PutResult> created = co_await root.put(prefix, "", options);
    if (!created.ok() && created.status().code() != make_error_code(Error::kBadVersion)) {
      co_return created.status();
    }
    if (slash == std::string::npos) co_return Status::OK();
    next = slash + 1;
  }
}

}  // namespace

Task<Result<std::unique_ptr<MetadataStore>>> open_zookeeper_store(std::string url_rest,
                                                                  StoreOptions options) {
  size_t slash = url_rest.find('/');
  std::string hosts = url_rest.substr(0, slash);
  std::string chroot = slash == std::string::npos ? "" : url_rest.substr(slash);
  if (!valid_hosts(hosts)) {
    co_return Status(Error::kBadUrl,
                     fmt::format("zk:{}: expected host:port[,host:port...][/chroot]", url_rest));
  }
  if (chroot == "/") chroot.clear();
  if (!chroot.empty()) {
    if (Status st = validate_path(chroot); !st.ok()) {
      co_return Status(Error::kBadUrl, fmt::format("zk:{}: bad chroot: {}", url_rest,
                                                   st.message()));
    }
    // The C client does not create its chroot: do it through a session without one.
    auto root = std::make_unique<ZooKeeperStore>(hosts, options);
    Status st = co_await root->connect();
    if (st.ok()) st = co_await create_chroot(*root, chroot);
    Status closed = co_await root->close();
    if (!st.ok()) co_return st;
    if (!closed.ok()) co_return closed;
  }
  auto store = std::make_unique<ZooKeeperStore>(hosts + chroot, options);
  if (Status st = co_await store->connect(); !st.ok()) co_return st;
  co_return std::unique_ptr<MetadataStore>(std::move(store));
}

}  // namespace magnetar::metadata
