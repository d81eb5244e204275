// etcd backend of MetadataStore; behaviour in etcd_store.h, key layout in etcd_keys.h.
//
// Threads and ownership:
//   caller's loop   the coroutines (get, put, ...). Each issues unary gRPC calls through the
//                   callback API; a call's completion (on a gRPC thread) only posts its answer
//                   to the awaiting coroutine's executor and touches nothing of the store.
//   janitor thread  ours, one per store: the session (lease grant, keep-alive ticks, loss and
//                   re-establishment), the watch and keep-alive streams (opened, resumed,
//                   closed) and the dispatch of notifications. Session state is the janitor's
//                   alone; callers read the lease id and state through atomics.
//   gRPC threads    run the streams' reactors and the janitor's own calls, which post back to
//                   the janitor.
// Every call or stream the janitor starts is registered in `tracked_` (its ClientContext): the
// destructor cancels them all and waits until each completed before the janitor and the
// store go away, so no gRPC callback outlives the store.

#include "metadata/etcd_store.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <future>
#include <thread>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "metadata/etcd_keys.h"
#include "metadata/etcd_rpc.grpc.pb.h"
#include "metadata/listeners.h"

namespace magnetar::metadata {
namespace {

namespace pb = etcdserverpb;
using Clock = std::chrono::steady_clock;

// Rounds of a transaction lost to other sessions (sequential counters, create-or-overwrite)
// before giving up.
constexpr int kMaxRaces = 64;
// Pause before repeating a request that met an unavailable member (reconnect, election).
constexpr std::chrono::milliseconds kRetryPause{100};
// Pause before reopening a stream that ended.
constexpr std::chrono::milliseconds kStreamRetryPause{250};
// Largest answer accepted from etcd (a listing of many children, a 1 MiB value).
constexpr int kMaxReceiveBytes = 256 * 1024 * 1024;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t random_write_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t id = 0;
  while (id == 0) id = rng();
  return id;
}

// --- Transaction building ---

pb::Compare key_exists(const std::string& key) {
  pb::Compare c;
  c.set_key(key);
  c.set_target(pb::Compare::CREATE);
  c.set_result(pb::Compare::GREATER);
  c.set_create_revision(0);
  return c;
}

pb::Compare key_absent(const std::string& key) {
  pb::Compare c;
  c.set_key(key);
  c.set_target(pb::Compare::CREATE);
  c.set_result(pb::Compare::EQUAL);
  c.set_create_revision(0);
  return c;
}

// No key at all in [begin, end).
pb::Compare range_empty(const std::string& begin, const std::string& end) {
  pb::Compare c = key_absent(begin);
  c.set_range_end(end);
  return c;
}

pb::Compare version_is(const std::string& key, int64_t etcd_version) {
  pb::Compare c;
  c.set_key(key);
  c.set_target(pb::Compare::VERSION);
  c.set_result(pb::Compare::EQUAL);
  c.set_version(etcd_version);
  return c;
}

pb::Compare mod_revision_is(const std::string& key, int64_t revision) {
  pb::Compare c;
  c.set_key(key);
  c.set_target(pb::Compare::MOD);
  c.set_result(pb::Compare::EQUAL);
  c.set_mod_revision(revision);
  return c;
}

void add_put(google::protobuf::RepeatedPtrField<pb::RequestOp>* ops, const std::string& key,
             std::string value, int64_t lease, bool keep_lease = false) {
  pb::PutRequest* put = ops->Add()->mutable_request_put();
  put->set_key(key);
  put->set_value(std::move(value));
  if (keep_lease) {
    put->set_ignore_lease(true);
  } else {
    put->set_lease(lease);
  }
}

enum class Read { kWhole, kKeysOnly, kCountOnly };

void add_range(google::protobuf::RepeatedPtrField<pb::RequestOp>* ops, const std::string& key,
               Read read = Read::kWhole, const std::string& end = {}) {
  pb::RangeRequest* range = ops->Add()->mutable_request_range();
  range->set_key(key);
  if (!end.empty()) range->set_range_end(end);
  range->set_keys_only(read == Read::kKeysOnly);
  range->set_count_only(read == Read::kCountOnly);
}

void add_delete(google::protobuf::RepeatedPtrField<pb::RequestOp>* ops, const std::string& key) {
  ops->Add()->mutable_request_delete_range()->set_key(key);
}

const pb::RangeResponse& range_at(const pb::TxnResponse& txn, int i) {
  static const pb::RangeResponse kEmpty;
  if (i >= txn.responses_size() || !txn.responses(i).has_response_range()) return kEmpty;
  return txn.responses(i).response_range();
}

const pb::KeyValue* first_kv(const pb::RangeResponse& range) {
  return range.kvs_size() > 0 ? &range.kvs(0) : nullptr;
}

// --- Calls ---

// The answer of one unary call.
template <typename Resp>
struct Answer {
  grpc::Status status;
  Resp resp;
};

template <typename Req, typename Resp>
struct UnaryCall {
  std::shared_ptr<grpc::Channel> channel;  // kept for the call's life
  grpc::ClientContext ctx;
  Req req;
  Resp resp;
};

// Starts a unary call through `invoke(ctx, req, resp, done)` (a stub's async() method) and
// returns the awaitable of its answer. Not a coroutine (see await_callback).
template <typename Resp, typename Req, typename Invoke>
Task<Answer<Resp>> unary(std::shared_ptr<grpc::Channel> channel, Req req,
                         std::chrono::milliseconds timeout, Invoke invoke) {
  auto call = std::make_shared<UnaryCall<Req, Resp>>();
  call->channel = std::move(channel);
  call->req = std::move(req);
  call->ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  call->ctx.set_wait_for_ready(true);
  auto start = [call, invoke = std::move(invoke)](std::function<void(Answer<Resp>)> done) {
    invoke(&call->ctx, &call->req, &call->resp,
           [call, done = std::move(done)](grpc::Status status) {
             done(Answer<Resp>{std::move(status), std::move(call->resp)});
           });
  };
  return await_callback<Answer<Resp>>(std::move(start));
}

// The caller may repeat the request: the member it reached died, or lost its leader.
bool retryable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE;
}

// --- Streams ---

// One bidirectional stream. Reads are handed to `on_read` and the end to `on_done`, both on a
// gRPC thread; writes are queued (one in flight, as gRPC requires). Shared ownership: the
// janitor holds it, and the stream holds itself until gRPC is done with it. gRPC may run a
// reaction inline, inside the StartWrite or TryCancel that caused it: hence the recursive
// mutex.
template <typename Req, typename Resp>
class Stream : public grpc::ClientBidiReactor<Req, Resp>,
               public std::enable_shared_from_this<Stream<Req, Resp>> {
 public:
  using ReadFn = std::function<void(Resp&)>;
  using DoneFn = std::function<void(const grpc::Status&)>;

  explicit Stream(ReadFn on_read) : on_read_(std::move(on_read)) {}

  grpc::ClientContext& context() { return ctx_; }
  // Before start(): the done callback names the stream, so it is set once the stream exists.
  void set_on_done(DoneFn on_done) { on_done_ = std::move(on_done); }

  // After the stub bound the reactor (stub->async()->Method(&context(), this)).
  void start() {
    self_ = this->shared_from_this();
    this->StartRead(&in_);
    this->StartCall();
  }

  void write(Req req) {
    std::lock_guard lock(mu_);
    if (finished_) return;
    out_.push_back(std::move(req));
    if (out_.size() == 1) this->StartWrite(&out_.front());
  }

  void cancel() { ctx_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream is ending: OnDone follows
    on_read_(in_);
    in_.Clear();
    this->StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    if (!out_.empty()) out_.pop_front();
    if (ok && !finished_ && !out_.empty()) this->StartWrite(&out_.front());
  }

  void OnDone(const grpc::Status& status) override {
    {
      std::lock_guard lock(mu_);
      finished_ = true;
    }
    if (on_done_) on_done_(status);
    std::shared_ptr<Stream> keep = std::move(self_);  // may free this on return
  }

 private:
  grpc::ClientContext ctx_;
  ReadFn on_read_;
  DoneFn on_done_;
  Resp in_;
  std::recursive_mutex mu_;
  std::deque<Req> out_;    // guarded by mu_; front() is being written
  bool finished_ = false;  // guarded by mu_
  std::shared_ptr<Stream> self_;
};

using WatchStream = Stream<pb::WatchRequest, pb::WatchResponse>;
using KeepAliveStream = Stream<pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse>;

// Where the session is (written by the janitor, read by anyone).
enum class SessionState { kConnected, kDisconnected, kLost, kClosed };

struct Endpoints {
  std::vector<std::pair<std::string, std::string>> hosts;  // host, port
  bool tls = false;
  std::string prefix;  // "" or a chroot path
  // PEM files, from the URL's query (Pulsar's TLS setting names).
  std::string trust_certs_file;  // tlsTrustCertsFilePath; empty: the system's roots
  std::string cert_file;         // tlsCertificateFilePath
  std::string key_file;          // tlsKeyFilePath
};

class EtcdStore final : public MetadataStore {
 public:
  EtcdStore(std::string url, std::shared_ptr<grpc::Channel> channel, std::string prefix,
            StoreOptions options)
      : url_(std::move(url)),
        options_(options),
        keys_(std::move(prefix)),
        log_(log::Logger("metadata").with("etcd", url_)),
        channel_(std::move(channel)),
        kv_(pb::KV::NewStub(channel_)),
        watch_(pb::Watch::NewStub(channel_)),
        lease_(pb::Lease::NewStub(channel_)),
        work_(asio::make_work_guard(janitor_)),
        tick_timer_(janitor_),
        watch_retry_timer_(janitor_) {
    janitor_thread_ = std::thread([this] { janitor_.run(); });
  }

  // Cancels the streams and the janitor's calls, waits for gRPC to finish each, and joins the
  // janitor. The lease is left to expire unless close() revoked it.
  ~EtcdStore() override {
    (void)begin_close();
    // The cancellation runs on the janitor after everything posted to it before (start()'s
    // posting that opens the session's streams among it), and is waited for: only then is
    // every stream tracked, so the wait below covers them all. A store destroyed right after
    // it opened used to return first, and the streams' endings then ran on a freed store.
    std::promise<void> cancelled;
    asio::post(janitor_, [this, &cancelled] {
      tick_timer_.cancel();
      watch_retry_timer_.cancel();
      if (watch_stream_) watch_stream_->cancel();
      if (keepalive_stream_) keepalive_stream_->cancel();
      cancelled.set_value();
    });
    cancelled.get_future().wait();
    cancel_tracked_and_wait();
    work_.reset();
    janitor_thread_.join();
  }

  // Grants the first lease and starts the streams.
  Task<Status> start() {
    auto work = asio::make_work_guard(co_await asio::this_coro::executor);
    auto granted = co_await grant_lease();
    if (!granted.status.ok()) {
      co_return call_status(granted.status, "connect", "");
    }
    if (granted.resp.ttl() <= 0 || !granted.resp.error().empty()) {
      co_return Status(Error::kBackend,
                       fmt::format("etcd refused a lease: {}", granted.resp.error()));
    }
    int64_t revision = granted.resp.header().revision();
    lease_id_ = granted.resp.id();  // before any caller can create an ephemeral
    granted_ttl_ms_ = granted.resp.ttl() * 1000;  // and before any caller asks
    auto begin = [this, lease = granted.resp.id(), ttl = granted.resp.ttl(), revision] {
      install_lease(lease, ttl);
      watch_from_ = revision + 1;
      open_watch();
      open_keepalive();
      schedule_tick();
    };
    asio::post(janitor_, std::move(begin));
    log_.info("session opened (lease {:x}, ttl {} s)", granted.resp.id(), granted.resp.ttl());
    co_return Status::OK();
  }

  Task<Result<std::optional<GetResult>>> get(std::string path) override {
    if (Status st = check_open(path); !st.ok()) co_return st;
    pb::TxnRequest txn;
    add_range(txn.mutable_success(), keys_.node(path));
    add_range(txn.mutable_success(), keys_.creation_time(path));
    auto answer = co_await txn_idempotent(std::move(txn));
    if (!answer.status.ok()) co_return call_status(answer.status, "get", path);
    const pb::KeyValue* kv = first_kv(range_at(answer.resp, 0));
    if (kv == nullptr) co_return std::optional<GetResult>();
    const pb::KeyValue* ctime = first_kv(range_at(answer.resp, 1));
    etcd::StoredValue stored = etcd::decode_value(kv->value());
    GetResult out;
    out.value = std::string(stored.value);
    out.stat = to_stat(*kv, stored.modification_time_ms,
                       ctime != nullptr ? etcd::decode_time(ctime->value()) : 0);
    co_return std::optional<GetResult>(std::move(out));
  }

  Task<Result<PutResult>> put(std::string path, std::string value, PutOptions options) override {
    if (Status st = check_open(path); !st.ok()) co_return st;
    if (path == "/") {
      co_return Status(Error::kBadVersion, "put /: the root always exists and holds nothing");
    }
    if (value.size() > options_.max_value_size) {
      co_return Status(Error::kTooLarge,
                       fmt::format("put {}: value of {} bytes exceeds the limit of {} bytes", path,
                                   value.size(), options_.max_value_size));
    }
    int64_t lease = 0;
    if (options.ephemeral) {
      if (session_state_.load() == SessionState::kLost) {
        co_return Status(Error::kSessionLost,
                         fmt::format("put {}: no session (expired, a new one is opening)", path));
      }
      lease = lease_id_.load();
    }
    if (options.sequential) co_return co_await put_sequential(path, value, lease);
    if (options.expected_version == -1) co_return co_await create(path, value, lease);
    if (options.expected_version) {
      int64_t expected = *options.expected_version;
      if (expected < -1) {
        co_return Status(Error::kBadVersion,
                         fmt::format("put {}: no node has version {}", path, expected));
      }
      co_return co_await update(path, value, expected);
    }
    co_return co_await create_or_update(path, value, lease);
  }

  Task<Status> remove(std::string path, std::optional<int64_t> expected_version) override {
    if (Status st = check_open(path); !st.ok()) co_return st;
    if (expected_version && *expected_version < 0) {
      co_return Status(Error::kBadVersion,
                       fmt::format("remove {}: expected version {} cannot match a node", path,
                                   *expected_version));
    }
    if (path == "/") co_return Status(Error::kNotEmpty, "remove /: the root cannot be removed");
    std::string node = keys_.node(path);
    pb::TxnRequest txn;
    *txn.add_compare() =
        expected_version ? version_is(node, *expected_version + 1) : key_exists(node);
    *txn.add_compare() = range_empty(keys_.children_begin(path), keys_.children_end(path));
    add_delete(txn.mutable_success(), node);
    add_delete(txn.mutable_success(), keys_.creation_time(path));
    add_delete(txn.mutable_success(), keys_.sequence(path));
    add_range(txn.mutable_failure(), node, Read::kKeysOnly);
    add_range(txn.mutable_failure(), keys_.children_begin(path), Read::kCountOnly,
              keys_.children_end(path));
    const auto deadline = Clock::now() + options_.operation_timeout;
    while (true) {
      auto answer = co_await txn_call(txn);
      if (answer.status.ok()) {
        if (answer.resp.succeeded()) co_return Status::OK();
        const pb::KeyValue* kv = first_kv(range_at(answer.resp, 0));
        if (kv == nullptr) {
          co_return Status(Error::kNotFound, fmt::format("remove {}: no such node", path));
        }
        if (expected_version && kv->version() != *expected_version + 1) {
          co_return Status(Error::kBadVersion, fmt::format("remove {}: version mismatch", path));
        }
        if (range_at(answer.resp, 1).count() > 0) {
          co_return Status(Error::kNotEmpty, fmt::format("remove {}: node has children", path));
        }
        // The failure reads run at the compare's revision, so one of the above holds; were
        // it not so, go again, within the deadline.
        if (Clock::now() >= deadline) {
          co_return Status(Error::kBadVersion, fmt::format("remove {}: the node kept changing",
                                                           path));
        }
        continue;
      }
      if (!retryable(answer.status) || Clock::now() >= deadline) {
        co_return call_status(answer.status, "remove", path);
      }
      // The answer was lost: the delete may have been applied. Look.
      co_await pause(kRetryPause);
      auto there = co_await exists(path);
      if (there.ok() && !*there) co_return Status::OK();
    }
  }

  Task<Result<std::vector<std::string>>> children(std::string path) override {
    if (Status st = check_open(path); !st.ok()) co_return st;
    std::string begin = keys_.children_begin(path);
    pb::TxnRequest txn;
    add_range(txn.mutable_success(), begin, Read::kKeysOnly, keys_.children_end(path));
    auto answer = co_await txn_idempotent(std::move(txn));
    if (!answer.status.ok()) co_return call_status(answer.status, "children", path);
    std::vector<std::string> names;
    const pb::RangeResponse& range = range_at(answer.resp, 0);
    names.reserve(static_cast<size_t>(range.kvs_size()));
    for (const auto& kv : range.kvs()) {
      if (kv.key().size() > begin.size()) names.push_back(kv.key().substr(begin.size()));
    }
    std::sort(names.begin(), names.end());
    co_return names;
  }

  Task<Result<bool>> exists(std::string path) override {
    if (Status st = check_open(path); !st.ok()) co_return st;
    if (path == "/") co_return true;
    pb::TxnRequest txn;
    add_range(txn.mutable_success(), keys_.node(path), Read::kCountOnly);
    auto answer = co_await txn_idempotent(std::move(txn));
    if (!answer.status.ok()) co_return call_status(answer.status, "exists", path);
    co_return range_at(answer.resp, 0).count() > 0;
  }

  ListenerId add_listener(Executor executor,
                          std::function<void(const Notification&)> listener) override {
    return listeners_.add(std::move(executor), std::move(listener)).id;
  }

  ListenerId add_session_listener(Executor executor,
                                  std::function<void(SessionEvent)> listener) override {
    return listeners_.add_session(std::move(executor), std::move(listener));
  }

  void remove_listener(ListenerId id) override { listeners_.remove(id); }

  int64_t session_id() const override { return lease_id_.load(); }
  // The lease's TTL as granted (etcd may raise what was asked for); before the first lease,
  // the timeout asked for.
  std::chrono::milliseconds session_timeout() const override {
    const int64_t granted = granted_ttl_ms_.load();
    return granted > 0 ? std::chrono::milliseconds(granted) : options_.session_timeout;
  }

  // Revokes the lease (its ephemerals go with it) and stops the streams.
  Task<Status> close() override {
    if (!begin_close()) co_return Status::OK();
    int64_t lease = lease_id_.load();
    auto stop = [this] {
      tick_timer_.cancel();
      watch_retry_timer_.cancel();
      if (watch_stream_) watch_stream_->cancel();
      if (keepalive_stream_) keepalive_stream_->cancel();
    };
    asio::post(janitor_, std::move(stop));
    pb::LeaseRevokeRequest req;
    req.set_id(lease);
    auto invoke = [stub = lease_.get()](grpc::ClientContext* ctx, const pb::LeaseRevokeRequest* rq,
                                        pb::LeaseRevokeResponse* rs,
                                        std::function<void(grpc::Status)> done) {
      stub->async()->LeaseRevoke(ctx, rq, rs, std::move(done));
    };
    auto work = asio::make_work_guard(co_await asio::this_coro::executor);
    auto revoked = co_await unary<pb::LeaseRevokeResponse>(
        channel_, std::move(req), options_.operation_timeout, std::move(invoke));
    if (!revoked.status.ok() &&
        revoked.status.error_code() != grpc::StatusCode::NOT_FOUND) {  // expired already
      log_.warn(
          "revoking the lease {:x} failed: {}; its ephemeral nodes stay until it "
          "expires",
          lease, revoked.status.error_message());
      co_return call_status(revoked.status, "close", "");
    }
    log_.info("session closed");
    co_return Status::OK();
  }

 private:
  // --- Operations ---

  Status check_open(const std::string& path) const {
    if (Status st = validate_path(path); !st.ok()) return st;
    if (Status st = etcd::check_depth(path); !st.ok()) return st;
    if (closed_.load()) {
      return Status(Error::kClosed, fmt::format("{}: store closed", path));
    }
    return Status::OK();
  }

  Stat to_stat(const pb::KeyValue& kv, int64_t mtime, int64_t ctime) const {
    Stat stat;
    stat.version = kv.version() - 1;
    stat.modification_time_ms = mtime;
    stat.creation_time_ms = ctime != 0 ? ctime : mtime;
    stat.ephemeral = kv.lease() != 0;
    stat.ephemeral_owner = kv.lease();
    return stat;
  }

  // A node this store just wrote: version as etcd will report it.
  static Stat written_stat(int64_t version, int64_t ctime, int64_t mtime, int64_t lease) {
    Stat stat;
    stat.version = version;
    stat.creation_time_ms = ctime;
    stat.modification_time_ms = mtime;
    stat.ephemeral = lease != 0;
    stat.ephemeral_owner = lease;
    return stat;
  }

  // The parent must exist (the root always does).
  void require_parent(pb::TxnRequest& txn, const std::string& path) const {
    std::string parent = parent_path(path);
    if (parent != "/") *txn.add_compare() = key_exists(keys_.node(parent));
  }

  Status missing_parent(std::string_view op, const std::string& path) const {
    return Status(Error::kNotFound,
                  fmt::format("{} {}: no such node (parent {})", op, path, parent_path(path)));
  }

  // The node as it is now, if our write (write_id) is what it holds: a write whose answer was
  // lost has been applied.
  Task<std::optional<pb::KeyValue>> ours(const std::string& path, uint64_t write_id) {
    pb::TxnRequest txn;
    add_range(txn.mutable_success(), keys_.node(path));
    auto answer = co_await txn_idempotent(std::move(txn));
    if (!answer.status.ok()) co_return std::nullopt;
    const pb::KeyValue* kv = first_kv(range_at(answer.resp, 0));
    if (kv == nullptr || etcd::decode_value(kv->value()).write_id != write_id) {
      co_return std::nullopt;
    }
    co_return *kv;
  }

  Task<Result<PutResult>> create(const std::string& path, const std::string& value, int64_t lease) {
    const int64_t now = wall_ms();
    const uint64_t write_id = random_write_id();
    std::string node = keys_.node(path);
    pb::TxnRequest txn;
    *txn.add_compare() = key_absent(node);
    require_parent(txn, path);
    add_put(txn.mutable_success(), node, etcd::encode_value(value, now, write_id), lease);
    add_put(txn.mutable_success(), keys_.creation_time(path), etcd::encode_time(now), lease);
    add_range(txn.mutable_failure(), node, Read::kCountOnly);
    const auto deadline = Clock::now() + options_.operation_timeout;
    while (true) {
      auto answer = co_await txn_call(txn);
      if (answer.status.ok()) {
        if (answer.resp.succeeded()) {
          co_return PutResult{path, written_stat(0, now, now, lease)};
        }
        if (range_at(answer.resp, 0).count() > 0) {
          co_return Status(Error::kBadVersion, fmt::format("create {}: node exists", path));
        }
        co_return missing_parent("create", path);
      }
      if (!retryable(answer.status) || Clock::now() >= deadline) {
        co_return call_status(answer.status, "create", path);
      }
      co_await pause(kRetryPause);
      if (auto kv = co_await ours(path, write_id)) {
        co_return PutResult{path, written_stat(kv->version() - 1, now, now, kv->lease())};
      }
    }
  }

  Task<Result<PutResult>> update(const std::string& path, const std::string& value,
                                 int64_t expected) {
    const int64_t now = wall_ms();
    const uint64_t write_id = random_write_id();
    std::string node = keys_.node(path);
    pb::TxnRequest txn;
    *txn.add_compare() = version_is(node, expected + 1);
    add_range(txn.mutable_success(), node, Read::kKeysOnly);
    add_range(txn.mutable_success(), keys_.creation_time(path));
    add_put(txn.mutable_success(), node, etcd::encode_value(value, now, write_id), 0,
            /*keep_lease=*/true);
    add_range(txn.mutable_failure(), node, Read::kCountOnly);
    const auto deadline = Clock::now() + options_.operation_timeout;
    while (true) {
      auto answer = co_await txn_call(txn);
      if (answer.status.ok()) {
        if (answer.resp.succeeded()) co_return updated(path, answer.resp, now);
        if (range_at(answer.resp, 0).count() == 0) {
          co_return Status(Error::kNotFound, fmt::format("set {}: no such node", path));
        }
        co_return Status(Error::kBadVersion, fmt::format("set {}: version mismatch", path));
      }
      if (!retryable(answer.status) || Clock::now() >= deadline) {
        co_return call_status(answer.status, "set", path);
      }
      co_await pause(kRetryPause);
      if (auto kv = co_await ours(path, write_id)) {
        co_return PutResult{path, written_stat(kv->version() - 1, 0, now, kv->lease())};
      }
    }
  }

  // The result of a transaction whose success ops began with a keys-only read of the node
  // and a read of its creation time, then overwrote it.
  PutResult updated(const std::string& path, const pb::TxnResponse& resp, int64_t now) const {
    const pb::KeyValue* before = first_kv(range_at(resp, 0));
    const pb::KeyValue* ctime = first_kv(range_at(resp, 1));
    int64_t version = before != nullptr ? before->version() : 0;  // etcd's, before the put
    int64_t created = ctime != nullptr ? etcd::decode_time(ctime->value()) : 0;
    return PutResult{path, written_stat(version, created != 0 ? created : now, now,
                                        before != nullptr ? before->lease() : 0)};
  }

  // Overwrites the node if it exists (keeping its lease, as ZooKeeper keeps an ephemeral
  // node's owner), else creates it. The value goes in one branch only (a transaction holding
  // it twice would not fit etcd's request limit for a 1 MiB value): an overwrite is one
  // transaction, a creation two.
  Task<Result<PutResult>> create_or_update(const std::string& path, const std::string& value,
                                           int64_t lease) {
    const int64_t now = wall_ms();
    const uint64_t write_id = random_write_id();
    std::string node = keys_.node(path);
    pb::TxnRequest txn;
    *txn.add_compare() = key_exists(node);
    add_range(txn.mutable_success(), node, Read::kKeysOnly);
    add_range(txn.mutable_success(), keys_.creation_time(path));
    add_put(txn.mutable_success(), node, etcd::encode_value(value, now, write_id), 0,
            /*keep_lease=*/true);
    const auto deadline = Clock::now() + options_.operation_timeout;
    for (int round = 0; round < kMaxRaces;) {
      auto answer = co_await txn_call(txn);
      if (answer.status.ok()) {
        if (answer.resp.succeeded()) co_return updated(path, answer.resp, now);
        auto created = co_await create(path, value, lease);
        if (created.ok() || !created.status().is(Errc::kBadVersion)) co_return created;
        ++round;  // created by another session meanwhile: overwrite it
        continue;
      }
      if (!retryable(answer.status) || Clock::now() >= deadline) {
        co_return call_status(answer.status, "put", path);
      }
      co_await pause(kRetryPause);
      if (auto kv = co_await ours(path, write_id)) {
        co_return PutResult{path, written_stat(kv->version() - 1, 0, now, kv->lease())};
      }
    }
    co_return Status(
        Error::kBadVersion,
        fmt::format("put {}: the node kept being created and deleted by others", path));
  }

  // A new child named path + a 10-digit counter kept per parent, bumped in the same
  // transaction (ZooKeeper's suffix is the parent's child version, also from 0).
  Task<Result<PutResult>> put_sequential(const std::string& path, const std::string& value,
                                         int64_t lease) {
    const int64_t now = wall_ms();
    const uint64_t write_id = random_write_id();
    std::string parent = parent_path(path);
    std::string counter_key = keys_.sequence(parent);
    std::string stored = etcd::encode_value(value, now, write_id);
    int64_t counter_revision = 0;  // a guess: no counter yet
    int64_t next = 0;
    const auto deadline = Clock::now() + options_.operation_timeout;
    for (int round = 0; round < kMaxRaces;) {
      std::string created = fmt::format("{}{:010d}", path, next);
      pb::TxnRequest txn;
      *txn.add_compare() = mod_revision_is(counter_key, counter_revision);
      require_parent(txn, path);
      add_put(txn.mutable_success(), counter_key, std::to_string(next + 1), 0);
      add_put(txn.mutable_success(), keys_.node(created), stored, lease);
      add_put(txn.mutable_success(), keys_.creation_time(created), etcd::encode_time(now), lease);
      add_range(txn.mutable_failure(), counter_key);
      if (parent != "/") add_range(txn.mutable_failure(), keys_.node(parent), Read::kCountOnly);
      auto answer = co_await txn_call(std::move(txn));
      if (answer.status.ok()) {
        if (answer.resp.succeeded()) {
          co_return PutResult{created, written_stat(0, now, now, lease)};
        }
        if (parent != "/" && range_at(answer.resp, 1).count() == 0) {
          co_return missing_parent("create", path);
        }
        const pb::KeyValue* counter = first_kv(range_at(answer.resp, 0));
        counter_revision = counter != nullptr ? counter->mod_revision() : 0;
        next = 0;
        if (counter != nullptr) {
          const std::string& text = counter->value();
          std::from_chars(text.data(), text.data() + text.size(), next);
        }
        ++round;
        continue;
      }
      if (!retryable(answer.status) || Clock::now() >= deadline) {
        co_return call_status(answer.status, "create", path);
      }
      co_await pause(kRetryPause);
      if (auto kv = co_await ours(created, write_id)) {
        co_return PutResult{created, written_stat(0, now, now, kv->lease())};
      }
    }
    co_return Status(Error::kBadVersion,
                     fmt::format("create {}: lost {} rounds for the sequence number to other "
                                 "sessions",
                                 path, kMaxRaces));
  }

  Task<Answer<pb::TxnResponse>> txn_call(pb::TxnRequest txn) {
    // Outstanding work on the caller's executor until etcd answers: nothing of ours is
    // queued there meanwhile, and a loop without work would return from run().
    auto work = asio::make_work_guard(co_await asio::this_coro::executor);
    auto invoke = [stub = kv_.get()](grpc::ClientContext* ctx, const pb::TxnRequest* rq,
                                     pb::TxnResponse* rs, std::function<void(grpc::Status)> done) {
      stub->async()->Txn(ctx, rq, rs, std::move(done));
    };
    co_return co_await unary<pb::TxnResponse>(channel_, std::move(txn), options_.operation_timeout,
                                              std::move(invoke));
  }

  // A read-only transaction, repeated over unavailable members until the deadline.
  Task<Answer<pb::TxnResponse>> txn_idempotent(pb::TxnRequest txn) {
    const auto deadline = Clock::now() + options_.operation_timeout;
    while (true) {
      auto answer = co_await txn_call(txn);
      if (!retryable(answer.status) || Clock::now() >= deadline) co_return answer;
      co_await pause(kRetryPause);
    }
  }

  static Task<void> pause(std::chrono::milliseconds how_long) {
    auto executor = co_await asio::this_coro::executor;
    asio::steady_timer timer(executor, how_long);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  Status call_status(const grpc::Status& status, std::string_view op, std::string_view path) const {
    std::string what = path.empty() ? std::string(op) : fmt::format("{} {}", op, path);
    const std::string& message = status.error_message();
    switch (status.error_code()) {
      case grpc::StatusCode::OK:
        return Status::OK();
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return Status(Error::kTimeout, fmt::format("{}: no answer from etcd ({}) within {} ms",
                                                   what, url_, options_.operation_timeout.count()));
      case grpc::StatusCode::UNAVAILABLE:
        return Status(Error::kConnectionLost,
                      fmt::format("{}: etcd unavailable: {}", what, message));
      case grpc::StatusCode::CANCELLED:
        if (closed_.load()) return Status(Error::kClosed, fmt::format("{}: store closed", what));
        return Status(Error::kConnectionLost, fmt::format("{}: call cancelled", what));
      default:
        break;
    }
    // etcd refuses a request above --max-request-bytes; its gRPC server one above that plus
    // 512 KiB before etcd sees it.
    if (message.find("request is too large") != std::string::npos ||
        (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
         message.find("larger than max") != std::string::npos)) {
      return Status(Error::kTooLarge,
                    fmt::format("{}: etcd refused the request as too large (its "
                                "--max-request-bytes is below the value's size): {}",
                                what, message));
    }
    return Status(Error::kBackend, fmt::format("{}: etcd: {} (gRPC status {})", what, message,
                                               static_cast<int>(status.error_code())));
  }

  // --- Janitor: calls it tracks ---

  void track(grpc::ClientContext* ctx) {
    std::lock_guard lock(tracked_mu_);
    tracked_.insert(ctx);
    if (tracking_stopped_) ctx->TryCancel();
  }

  void untrack(grpc::ClientContext* ctx) {
    std::lock_guard lock(tracked_mu_);
    tracked_.erase(ctx);
    if (tracked_.empty()) tracked_cv_.notify_all();
  }

  void cancel_tracked_and_wait() {
    std::unique_lock lock(tracked_mu_);
    tracking_stopped_ = true;
    std::vector<grpc::ClientContext*> calls(tracked_.begin(), tracked_.end());
    for (grpc::ClientContext* ctx : calls) {
      // An earlier cancel may have completed (and freed) this one inline.
      if (tracked_.count(ctx) > 0) ctx->TryCancel();
    }
    tracked_cv_.wait(lock, [this] { return tracked_.empty(); });
  }

  // The lease TTL asked for: session_timeout in whole seconds, rounded up, at least 1.
  int64_t requested_ttl_seconds() const {
    return std::max<int64_t>(1, (options_.session_timeout.count() + 999) / 1000);
  }

  // The first LeaseGrant, awaited by start() (regrant() is the janitor's own).
  Task<Answer<pb::LeaseGrantResponse>> grant_lease() {
    pb::LeaseGrantRequest req;
    req.set_ttl(requested_ttl_seconds());
    auto invoke = [stub = lease_.get()](grpc::ClientContext* ctx, const pb::LeaseGrantRequest* rq,
                                        pb::LeaseGrantResponse* rs,
                                        std::function<void(grpc::Status)> done) {
      stub->async()->LeaseGrant(ctx, rq, rs, std::move(done));
    };
    return unary<pb::LeaseGrantResponse>(channel_, std::move(req), options_.operation_timeout,
                                         std::move(invoke));
  }

  // Janitor's asynchronous grant (no coroutine on the janitor): the answer comes back to
  // on_granted on the janitor.
  void regrant() {
    if (granting_ || closed_.load()) return;
    granting_ = true;
    auto call = std::make_shared<UnaryCall<pb::LeaseGrantRequest, pb::LeaseGrantResponse>>();
    call->channel = channel_;
    call->req.set_ttl(requested_ttl_seconds());
    call->ctx.set_deadline(std::chrono::system_clock::now() + options_.session_timeout);
    track(&call->ctx);
    lease_->async()->LeaseGrant(
        &call->ctx, &call->req, &call->resp, [this, call](grpc::Status status) {
          auto done = [this, call, status] { on_granted(status, call->resp); };
          asio::post(janitor_, std::move(done));
          untrack(&call->ctx);
        });
  }

  void on_granted(const grpc::Status& status, const pb::LeaseGrantResponse& resp) {
    granting_ = false;
    if (closed_.load()) return;
    if (!status.ok() || resp.ttl() <= 0) {
      log_.debug("granting a new lease failed: {}",
                 status.ok() ? resp.error() : status.error_message());
      return;  // the next tick tries again
    }
    revoke_quietly(lease_id_.load());  // etcd may not have expired the lost one yet
    install_lease(resp.id(), resp.ttl());
    // A keep-alive stream of the old lease may still be open: start a fresh one.
    if (keepalive_stream_) keepalive_stream_->cancel();
    open_keepalive();
    log_.info("new session (lease {:x}, ttl {} s)", resp.id(), resp.ttl());
    notify_session(SessionEvent::kSessionReestablished);
  }

  void revoke_quietly(int64_t lease) {
    if (lease == 0) return;
    auto call = std::make_shared<UnaryCall<pb::LeaseRevokeRequest, pb::LeaseRevokeResponse>>();
    call->channel = channel_;
    call->req.set_id(lease);
    call->ctx.set_deadline(std::chrono::system_clock::now() + options_.operation_timeout);
    track(&call->ctx);
    lease_->async()->LeaseRevoke(&call->ctx, &call->req, &call->resp,
                                 [this, call](grpc::Status) { untrack(&call->ctx); });
  }

  // --- Janitor: the session ---

  void install_lease(int64_t lease, int64_t ttl_seconds) {
    lease_id_ = lease;
    ttl_ = std::chrono::seconds(ttl_seconds);
    granted_ttl_ms_ = ttl_.count();
    // A keep-alive every tick, eight per TTL: the last answered one is at most a tick old
    // when etcd stops answering, and the loss is seen within a tick of its deadline.
    tick_ = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(100), ttl_ / 8);
    last_confirmed_ = Clock::now();
    sent_.clear();
    session_state_ = SessionState::kConnected;
  }

  void schedule_tick() {
    tick_timer_.expires_after(tick_);
    tick_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || closed_.load()) return;
      on_tick();
      schedule_tick();
    });
  }

  void on_tick() {
    const auto now = Clock::now();
    SessionState state = session_state_.load();
    if (state == SessionState::kLost) {
      regrant();
      return;
    }
    // Lost once the last confirmed keep-alive was sent a TTL ago, less a tick of margin
    // (ticks are what we look with): etcd, which counts from receiving it, cannot have
    // expired it earlier.
    if (now - last_confirmed_ >= ttl_ - tick_) {
      lose_session("no keep-alive answered for the lease's TTL");
      regrant();
      return;
    }
    if (state == SessionState::kConnected && now - last_confirmed_ >= ttl_ / 2) {
      session_state_ = SessionState::kDisconnected;
      log_.warn(
          "keep-alives unanswered for {} ms: connection lost",
          std::chrono::duration_cast<std::chrono::milliseconds>(now - last_confirmed_).count());
      notify_session(SessionEvent::kConnectionLost);
    }
    if (!keepalive_stream_) open_keepalive();
    pb::LeaseKeepAliveRequest req;
    req.set_id(lease_id_.load());
    sent_.push_back(now);
    if (sent_.size() > 64) sent_.pop_front();  // answers lost with a stream
    keepalive_stream_->write(std::move(req));
  }

  void lose_session(std::string_view why) {
    if (session_state_.load() == SessionState::kLost) return;
    session_state_ = SessionState::kLost;
    log_.warn("session lost (lease {:x}): {}", lease_id_.load(), why);
    notify_session(SessionEvent::kSessionLost);
  }

  void on_keepalive(int64_t lease, int64_t ttl) {
    if (closed_.load() || lease != lease_id_.load()) return;
    if (ttl <= 0) {
      lose_session("etcd says the lease expired");
      regrant();
      return;
    }
    SessionState state = session_state_.load();
    if (state == SessionState::kLost) return;
    if (!sent_.empty()) {
      last_confirmed_ = std::max(last_confirmed_, sent_.front());
      sent_.pop_front();
    }
    if (state == SessionState::kDisconnected) {
      session_state_ = SessionState::kConnected;
      log_.info("keep-alives answered again: reconnected");
      notify_session(SessionEvent::kReconnected);
    }
  }

  void open_keepalive() {
    if (closed_.load()) return;
    auto on_read = [this](pb::LeaseKeepAliveResponse& resp) {
      auto answered = [this, lease = resp.id(), ttl = resp.ttl()] { on_keepalive(lease, ttl); };
      asio::post(janitor_, std::move(answered));
    };
    auto stream = std::make_shared<KeepAliveStream>(std::move(on_read));
    KeepAliveStream* raw = stream.get();
    stream->set_on_done([this, raw](const grpc::Status&) {
      auto ended = [this, raw] {
        if (keepalive_stream_.get() == raw) keepalive_stream_.reset();  // the next tick reopens
      };
      asio::post(janitor_, std::move(ended));
      untrack(&raw->context());
    });
    keepalive_stream_ = stream;
    sent_.clear();  // answers to the old stream's keep-alives will not come
    track(&stream->context());
    lease_->async()->LeaseKeepAlive(&stream->context(), stream.get());
    stream->start();
  }

  // --- Janitor: the watch ---

  void open_watch() {
    if (closed_.load()) return;
    auto on_read = [this](pb::WatchResponse& resp) { on_watch_response(resp); };
    auto stream = std::make_shared<WatchStream>(std::move(on_read));
    WatchStream* raw = stream.get();
    stream->set_on_done([this, raw](const grpc::Status& status) {
      auto ended = [this, raw, status] {
        if (watch_stream_.get() != raw) return;
        watch_stream_.reset();
        if (closed_.load()) return;
        log_.debug("watch stream ended ({}); resuming from revision {}", status.error_message(),
                   watch_from_.load());
        watch_retry_timer_.expires_after(kStreamRetryPause);
        watch_retry_timer_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec) open_watch();
        });
      };
      asio::post(janitor_, std::move(ended));
      untrack(&raw->context());
    });
    watch_stream_ = stream;
    track(&stream->context());
    watch_->async()->Watch(&stream->context(), stream.get());
    stream->start();
    pb::WatchRequest req;
    pb::WatchCreateRequest* create = req.mutable_create_request();
    create->set_key(keys_.nodes_begin());
    create->set_range_end(keys_.nodes_end());
    create->set_start_revision(watch_from_.load());
    stream->write(std::move(req));
  }

  // On a gRPC thread, one response at a time (a stream's reads are ordered).
  void on_watch_response(const pb::WatchResponse& resp) {
    if (resp.compact_revision() != 0) {
      // History from watch_from_ was compacted away: changes in between are not notified
      // (as after a ZooKeeper session loss, re-read what matters).
      log_.warn(
          "watch from revision {} is compacted (oldest kept {}): resuming there; "
          "changes in between were not notified",
          watch_from_.load(), resp.compact_revision());
      watch_from_ = resp.compact_revision();
      cancel_watch_stream();
      return;
    }
    if (resp.canceled()) {
      log_.warn("etcd cancelled the watch: {}", resp.cancel_reason());
      cancel_watch_stream();
      return;
    }
    for (const pb::Event& event : resp.events()) {
      const pb::KeyValue& kv = event.kv();
      watch_from_ = std::max(watch_from_.load(), kv.mod_revision() + 1);
      std::optional<std::string> path = keys_.path_of(kv.key());
      if (!path || *path == "/") continue;
      if (event.type() == pb::Event::DELETE) {
        notify(Notification{NotificationType::kDeleted, *path});
        notify(Notification{NotificationType::kChildrenChanged, parent_path(*path)});
      } else if (kv.version() == 1) {
        notify(Notification{NotificationType::kCreated, *path});
        notify(Notification{NotificationType::kChildrenChanged, parent_path(*path)});
      } else {
        notify(Notification{NotificationType::kModified, *path});
      }
    }
  }

  void cancel_watch_stream() {
    auto cancel = [this] {
      if (watch_stream_) watch_stream_->cancel();
    };
    asio::post(janitor_, std::move(cancel));
  }

  // --- Notifications ---

  void notify(const Notification& notification) { listeners_.notify(notification); }
  void notify_session(SessionEvent event) { listeners_.notify_session(event); }

  // Marks the store closed and stops notifications; false when it was closed before.
  bool begin_close() {
    if (closed_.exchange(true)) return false;
    session_state_ = SessionState::kClosed;
    listeners_.close();
    return true;
  }

  const std::string url_;
  const StoreOptions options_;
  const etcd::KeyLayout keys_;
  const log::Logger log_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<pb::KV::Stub> kv_;
  const std::unique_ptr<pb::Watch::Stub> watch_;
  const std::unique_ptr<pb::Lease::Stub> lease_;

  std::atomic<bool> closed_{false};
  std::atomic<int64_t> lease_id_{0};
  std::atomic<int64_t> granted_ttl_ms_{0};  // the current lease's TTL; 0 before the first
  std::atomic<SessionState> session_state_{SessionState::kConnected};
  std::atomic<int64_t> watch_from_{0};  // revision the next watch starts at

  ListenerRegistry listeners_;

  // Recursive: a TryCancel made under it may run the call's completion, which untracks, inline.
  std::recursive_mutex tracked_mu_;
  std::condition_variable_any tracked_cv_;
  std::set<grpc::ClientContext*> tracked_;  // guarded by tracked_mu_
  bool tracking_stopped_ = false;           // guarded by tracked_mu_

  // Janitor thread only.
  std::chrono::milliseconds ttl_{30000};
  std::chrono::milliseconds tick_{7500};
  Clock::time_point last_confirmed_;    // send time of the newest answered keep-alive
  std::deque<Clock::time_point> sent_;  // send times of keep-alives not yet answered
  bool granting_ = false;
  std::shared_ptr<WatchStream> watch_stream_;
  std::shared_ptr<KeepAliveStream> keepalive_stream_;

  asio::io_context janitor_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::steady_timer tick_timer_;
  asio::steady_timer watch_retry_timer_;
  std::thread janitor_thread_;
};

// "http://h1:2379,h2:2379/prefix", "https://h1:2379,https://h2:2379", "h1:2379" (http).
Result<Endpoints> parse_endpoints(std::string_view rest) {
  auto bad = [&](std::string_view why) {
    return Status(Error::kBadUrl,
                  fmt::format("etcd:{}: {} (expected etcd:http[s]://host:port[,host:port...]"
                              "[/prefix])",
                              rest, why));
  };
  Endpoints out;
  if (size_t query = rest.find('?'); query != std::string_view::npos) {
    std::string_view params = rest.substr(query + 1);
    rest = rest.substr(0, query);
    while (!params.empty()) {
      size_t amp = params.find('&');
      std::string_view param = params.substr(0, amp);
      params = amp == std::string_view::npos ? std::string_view() : params.substr(amp + 1);
      size_t eq = param.find('=');
      std::string_view key = param.substr(0, eq);
      std::string value(eq == std::string_view::npos ? "" : param.substr(eq + 1));
      if (key == "tlsTrustCertsFilePath") {
        out.trust_certs_file = value;
      } else if (key == "tlsCertificateFilePath") {
        out.cert_file = value;
      } else if (key == "tlsKeyFilePath") {
        out.key_file = value;
      } else {
        return bad(fmt::format("unknown parameter '{}' (tlsTrustCertsFilePath, "
                               "tlsCertificateFilePath, tlsKeyFilePath)",
                               key));
      }
    }
  }
  std::optional<bool> tls;
  size_t start = 0;
  while (true) {
    size_t comma = rest.find(',', start);
    std::string_view entry = rest.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    bool entry_tls = tls.value_or(false);
    if (entry.substr(0, 7) == "http://") {
      entry_tls = false;
      entry.remove_prefix(7);
    } else if (entry.substr(0, 8) == "https://") {
      entry_tls = true;
      entry.remove_prefix(8);
    } else if (entry.find("://") != std::string_view::npos) {
      return bad("only http:// and https:// endpoints");
    }
    if (tls && *tls != entry_tls) return bad("mixed http:// and https:// endpoints");
    tls = entry_tls;
    if (size_t slash = entry.find('/'); slash != std::string_view::npos) {
      if (comma != std::string_view::npos) return bad("a prefix only after the last endpoint");
      out.prefix = std::string(entry.substr(slash));
      entry = entry.substr(0, slash);
    }
    size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return bad("an endpoint without a port");
    std::string_view host = entry.substr(0, colon);
    std::string_view port = entry.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
      return bad(fmt::format("bad port '{}'", port));
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) return bad("an endpoint without a host");
    out.hosts.emplace_back(std::string(host), std::string(port));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  out.tls = tls.value_or(false);
  if (!out.tls && !(out.trust_certs_file.empty() && out.cert_file.empty() &&
                    out.key_file.empty())) {
    return bad("TLS files given for http:// endpoints (use https://)");
  }
  if (out.cert_file.empty() != out.key_file.empty()) {
    return bad("a client certificate needs both tlsCertificateFilePath and tlsKeyFilePath");
  }
  if (out.prefix == "/") out.prefix.clear();
  if (!out.prefix.empty()) {
    if (Status st = validate_path(out.prefix); !st.ok()) {
      return bad(fmt::format("bad prefix: {}", st.message()));
    }
  }
  return out;
}

Result<std::string> read_pem(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Error::kBackend, fmt::format("etcd TLS: cannot read the {} file {}", what, path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<std::shared_ptr<grpc::ChannelCredentials>> credentials(const Endpoints& endpoints) {
  if (!endpoints.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!endpoints.trust_certs_file.empty()) {
    MAGNETAR_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                              read_pem(endpoints.trust_certs_file, "trusted CA"));
  }
  if (!endpoints.cert_file.empty()) {
    MAGNETAR_ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                              read_pem(endpoints.cert_file, "client certificate"));
    MAGNETAR_ASSIGN_OR_RETURN(ssl.pem_private_key, read_pem(endpoints.key_file, "client key"));
  }
  return grpc::SslCredentials(ssl);
}

// gRPC's target for the endpoints: one host by name (gRPC resolves it), several as the
// addresses they resolve to now, tried in order (pick_first) when a member goes away.
Task<Result<std::string>> channel_target(const Endpoints& endpoints) {
  if (endpoints.hosts.size() == 1) {
    const auto& [host, port] = endpoints.hosts.front();
    bool v6 = host.find(':') != std::string::npos;
    co_return v6 ? fmt::format("ipv6:[{}]:{}", host, port)
                 : fmt::format("dns:///{}:{}", host, port);
  }
  auto executor = co_await asio::this_coro::executor;
  asio::ip::tcp::resolver resolver(executor);
  std::vector<std::string> v4;
  std::vector<std::string> v6;
  for (const auto& [host, port] : endpoints.hosts) {
    boost::system::error_code ec;
    auto results =
        co_await resolver.async_resolve(host, port, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      co_return Status(Error::kBadUrl,
                       fmt::format("etcd endpoint {}:{}: {}", host, port, ec.message()));
    }
    for (const auto& entry : results) {
      const auto& endpoint = entry.endpoint();
      std::string address = endpoint.address().to_string();
      if (endpoint.address().is_v4()) {
        v4.push_back(fmt::format("{}:{}", address, endpoint.port()));
      } else {
        v6.push_back(fmt::format("[{}]:{}", address, endpoint.port()));
      }
      break;  // one address per member
    }
  }
  if (!v4.empty()) co_return fmt::format("ipv4:{}", fmt::join(v4, ","));
  co_return fmt::format("ipv6:{}", fmt::join(v6, ","));
}

}  // namespace

Task<Result<std::unique_ptr<MetadataStore>>> open_etcd_store(std::string url_rest,
                                                             StoreOptions options) {
  auto endpoints = parse_endpoints(url_rest);
  if (!endpoints.ok()) co_return endpoints.status();
  auto creds = credentials(*endpoints);
  if (!creds.ok()) co_return creds.status();
  auto target = co_await channel_target(*endpoints);
  if (!target.ok()) co_return target.status();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
  args.SetMaxSendMessageSize(kMaxReceiveBytes);
  // Find a dead connection within seconds (etcd refuses pings more often than every 5 s).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  // Move to another member quickly when one dies.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  if (endpoints->tls) {
    // Certificates name the members' host names, not the addresses resolved here.
    args.SetSslTargetNameOverride(endpoints->hosts.front().first);
  }
  auto channel = grpc::CreateCustomChannel(*target, *creds, args);
  auto store = std::make_unique<EtcdStore>("etcd:" + url_rest, std::move(channel),
                                           endpoints->prefix, options);
  if (Status st = co_await store->start(); !st.ok()) co_return st;
  co_return std::unique_ptr<MetadataStore>(std::move(store));
}

}  // namespace magnetar::metadata
