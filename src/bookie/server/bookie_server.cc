#include "bookie/server/bookie_server.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "metadata/paths.h"
#include "common/metrics.h"
#include "net/outbox.h"
#include "protocol/bookie_frame.h"
#include "protocol/local_bookie.h"

namespace magnetar::bookie {

namespace {

using Clock = std::chrono::steady_clock;

// From the read that brought an add to its answer queued for the socket: the bookie's part
// of an add's latency (the journal's is magnetar_bookie_journal_add_latency_ms).
metrics::Histogram& add_request_latency() {
  static const std::shared_ptr<metrics::Histogram> h = [] {
    auto family = metrics::default_registry().histogram(
        "magnetar_bookie_add_request_latency_ms",
        "From reading an add request to queueing its answer, ms", {},
        metrics::fine_latency_buckets_ms());
    MAGNETAR_ASSERT(family.ok(), family.status().to_string());
    return (*family)->get();
  }();
  return *h;
}

// Bounds of one gathered write (IOV_MAX is 1024 on Linux).
constexpr size_t kMaxWritePieces = 1024;
constexpr size_t kMaxWriteBytes = 4 << 20;

using bookie_wire::BookieRequest;
using bookie_wire::BookieResponse;
using Reply = std::function<void(BookieResponse, BufferChain)>;

// Serves a request other than an add, for either transport (each batches adds its own way):
// `reply` gets the answer at once (LAC, info, an unknown operation) or later from a bookie
// thread (reads).
void serve_request(Bookie& bookie, const BookieRequest& req, const log::Logger& log,
                   Reply reply) {
  const uint64_t id = req.request_id();
  switch (req.op_case()) {
    case BookieRequest::kRead: {
      bookie_wire::ReadRequest read = req.read();
      bookie.read_entry(read, [reply = std::move(reply), id, read](BookieStatus st, Buffer entry,
                                                                   int64_t lac) {
        BookieResponse r;
        r.set_request_id(id);
        auto* rr = r.mutable_read();
        rr->set_status(st);
        rr->set_ledger_id(read.ledger_id());
        rr->set_entry_id(read.entry_id());
        rr->set_lac(lac);
        reply(std::move(r), BufferChain(std::move(entry)));
      });
      return;
    }
    case BookieRequest::kReadRange: {
      const int64_t ledger_id = req.read_range().ledger_id();
      const int64_t first = req.read_range().first_entry_id();
      auto answered = [reply = std::move(reply), id, ledger_id, first](
                          BookieStatus st, std::vector<Buffer> entries, int64_t lac) {
        BookieResponse r;
        r.set_request_id(id);
        auto* rr = r.mutable_read_range();
        rr->set_status(st);
        rr->set_ledger_id(ledger_id);
        rr->set_first_entry_id(first);
        rr->set_lac(lac);
        BufferChain body;
        for (Buffer& e : entries) {
          rr->add_entry_sizes(static_cast<uint32_t>(e.size()));
          body.append(std::move(e));
        }
        reply(std::move(r), std::move(body));
      };
      bookie.read_range(req.read_range(), std::move(answered));
      return;
    }
    case BookieRequest::kReadLac: {
      BookieResponse r;
      r.set_request_id(id);
      *r.mutable_read_lac() = bookie.read_lac(LedgerId{req.read_lac().ledger_id()});
      reply(std::move(r), BufferChain());
      return;
    }
    case BookieRequest::kInfo: {
      BookieResponse r;
      r.set_request_id(id);
      *r.mutable_info() = bookie.info();
      reply(std::move(r), BufferChain());
      return;
    }
    case BookieRequest::kAdd:
    case BookieRequest::OP_NOT_SET:
      break;
  }
  // An operation of a newer protocol (or none): that request fails, the others go on.
  log.debug("request {} has no operation this bookie knows: answered BAD_REQUEST", id);
  BookieResponse r;
  r.set_request_id(id);
  r.set_unsupported_op(bookie_wire::BAD_REQUEST);
  reply(std::move(r), BufferChain());
}
}  // namespace

using asio::ip::tcp;

// maxAddsInProgressLimit: adds handed to the bookie and not yet answered, over every
// connection. At the limit a connection stops reading after its current read, so TCP pushes
// back on its clients, until answers bring the count under the limit (BookKeeper disables
// auto-read on the channel the same way). Shared by the server and its connections.
class BookieServer::AddsInProgress {
 public:
  explicit AddsInProgress(int64_t limit) : limit_(limit) {}

  void started(size_t n) { count_.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed); }
  // Any thread. Wakes the paused readers once the count is under the limit.
  void finished(size_t n) {
    int64_t now = count_.fetch_sub(static_cast<int64_t>(n), std::memory_order_acq_rel) -
                  static_cast<int64_t>(n);
    if (now < limit_ && have_paused_.load(std::memory_order_acquire)) wake_all();
  }
  bool over() const {
    return limit_ > 0 && count_.load(std::memory_order_acquire) >= limit_;
  }
  // Registers `resume` to run (on any thread) once the count is under the limit. False, and
  // nothing registered, when it already is.
  bool pause(std::function<void()> resume) {
    std::lock_guard lock(mu_);
    paused_.push_back(std::move(resume));
    have_paused_.store(true, std::memory_order_release);
    if (over()) return true;
    paused_.pop_back();  // answers came meanwhile, and may have missed the flag
    have_paused_.store(!paused_.empty(), std::memory_order_release);
    return false;
  }
  // Drops every registered reader without running it (the server is stopping).
  void clear() {
    std::lock_guard lock(mu_);
    paused_.clear();
    have_paused_.store(false, std::memory_order_release);
  }

 private:
  void wake_all() {
    std::vector<std::function<void()>> woken;
    {
      std::lock_guard lock(mu_);
      woken.swap(paused_);
      have_paused_.store(false, std::memory_order_release);
    }
    for (auto& resume : woken) resume();
  }

  const int64_t limit_;
  std::atomic<int64_t> count_{0};
  std::atomic<bool> have_paused_{false};
  std::mutex mu_;
  std::vector<std::function<void()>> paused_;
};

// One client connection. Owned by shared_ptr: the read loop, the write loop and every
// in-flight request hold it, so it lives until the last of them is done. All its state is
// touched only on its loop (responses from bookie threads are posted there).
class BookieServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<asio::io_context> loop, tcp::socket socket, Bookie& bookie,
             uint32_t max_frame, std::shared_ptr<AddsInProgress> in_progress, log::Logger log)
      : loop_(std::move(loop)),
        socket_(std::move(socket)),
        executor_(socket_.get_executor()),
        bookie_(bookie),
        decoder_(max_frame),
        in_progress_(std::move(in_progress)),
        log_(std::move(log)),
        outbox_(socket_.get_executor(),
                net::OutboxOptions{.max_pieces = kMaxWritePieces, .max_bytes = kMaxWriteBytes}),
        resume_(socket_.get_executor()) {
    resume_.expires_at(asio::steady_timer::time_point::max());
  }

  void start() {
    auto self = shared_from_this();
    asio::co_spawn(socket_.get_executor(), [self]() { return self->read_loop(); },
                   asio::detached);
    // What send() queues goes out in gathered writes; a failed write closes the connection.
    auto write_failed = [this](const boost::system::error_code&) { close(); };
    asio::co_spawn(
        socket_.get_executor(),
        [self, write_failed]() { return self->outbox_.run(self->socket_, write_failed); },
        asio::detached);
  }

  Executor executor() { return socket_.get_executor(); }

  void close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    outbox_.close();
    resume_.cancel();
  }

 private:
  Task<void> read_loop() {
    auto self = shared_from_this();
    while (!closed_) {
      Buffer chunk = Buffer::allocate(64 * 1024);
      boost::system::error_code ec;
      size_t n = co_await socket_.async_read_some(
          asio::buffer(chunk.mutable_data(), chunk.size()),
          asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      read_at_ = Clock::now();
      chunk.truncate(n);
      decoder_.feed(std::move(chunk));
      while (true) {
        auto frame = decoder_.next();
        if (!frame.ok()) {
          log_.warn("closing connection: {}", frame.status().to_string());
          close();
          co_return;
        }
        if (!frame->has_value()) break;
        dispatch(std::move(**frame));
      }
      hand_off_adds();
      if (in_progress_->over()) co_await wait_for_answers();
    }
    close();
  }

  // Paused at maxAddsInProgressLimit: nothing more is read until answers bring the count
  // under the limit (or the connection closes).
  Task<void> wait_for_answers() {
    // Holds the loop weakly: it may be woken by a journal thread after the server is gone.
    auto resume = [weak = weak_from_this(), weak_loop = loop_] {
      if (auto loop = weak_loop.lock()) {
        asio::post(*loop, [weak] {
          if (auto self = weak.lock()) self->resume_.cancel();
        });
      }
    };
    if (!in_progress_->pause(std::move(resume))) co_return;
    boost::system::error_code ec;
    co_await resume_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  // What a bookie callback holds: this connection and its loop. The callbacks run (and are
  // destroyed) on bookie threads, possibly after the server stopped: the connection (its
  // timers, its socket) must go before the loop that owns their services, hence one object
  // with that member order rather than two lambda captures, whose order is unspecified.
  struct Held {
    std::shared_ptr<asio::io_context> loop;  // declared first: destroyed last
    std::shared_ptr<Connection> conn;
  };

  void dispatch(protocol::BookieFrame<BookieRequest> frame) {
    const BookieRequest& req = frame.header;
    const uint64_t id = req.request_id();
    auto self = shared_from_this();
    Held held{loop_.lock(), self};
    if (req.op_case() == BookieRequest::kAdd) {
      // The request moves on to the bookie; the answer needs only its ids.
      const int64_t ledger_id = req.add().ledger_id(), entry_id = req.add().entry_id();
      auto answer = [held, id, ledger_id, entry_id, received = read_at_](BookieStatus st) {
        held.conn->answer_add(AddAnswer{id, ledger_id, entry_id, st, received});
      };
      adds_.push_back(Bookie::Add{std::move(*frame.header.mutable_add()),
                                  std::move(frame.body), std::move(answer)});
      return;
    }
    // Other requests keep their place after the adds before them.
    hand_off_adds();
    serve_request(bookie_, req, log_,
                  [held, executor = socket_.get_executor()](BookieResponse r, BufferChain body) {
                    asio::post(executor, [self = held.conn, r = std::move(r),
                                          body = std::move(body)]() mutable {
                      self->send(r, std::move(body));
                    });
                  });
  }

  // The adds decoded from one read go to the storage workers in one hand-off.
  void hand_off_adds() {
    if (adds_.empty()) return;
    in_progress_->started(adds_.size());
    bookie_.add_entries(std::move(adds_));
    adds_.clear();
  }

  void send(const BookieResponse& response, Buffer body) {
    send(response, BufferChain(std::move(body)));
  }
  void send(const BookieResponse& response, BufferChain body) {
    if (closed_) return;
    outbox_.push(protocol::encode_bookie_frame(response, body));
  }

  struct AddAnswer {
    uint64_t request_id;
    int64_t ledger_id;
    int64_t entry_id;
    BookieStatus status;
    Clock::time_point received;
  };

  // Called on a journal thread once an add is durable (or failed). The answers of one journal
  // group reach the loop together: the first queues one drain, the rest ride along.
  void answer_add(AddAnswer a) {
    in_progress_->finished(1);
    bool post = false;
    {
      std::lock_guard<std::mutex> lock(answers_mu_);
      answers_.push_back(a);
      post = !drain_queued_;
      drain_queued_ = true;
    }
    if (post) {
      asio::post(executor_, [self = shared_from_this()] { self->drain_answers(); });
    }
  }

  void drain_answers() {
    std::vector<AddAnswer> answers;
    {
      std::lock_guard<std::mutex> lock(answers_mu_);
      answers.swap(answers_);
      drain_queued_ = false;
    }
    BookieResponse r;
    auto* add = r.mutable_add();
    const auto now = Clock::now();
    metrics::Histogram& latency = add_request_latency();
    for (const AddAnswer& a : answers) {
      latency.observe(std::chrono::duration<double, std::milli>(now - a.received).count());
      r.set_request_id(a.request_id);
      add->set_status(a.status);
      add->set_ledger_id(a.ledger_id);
      add->set_entry_id(a.entry_id);
      send(r, Buffer());
    }
  }

  // Weak: the loop's queued handlers own this connection, so owning the loop back would be a
  // cycle. In-flight bookie callbacks hold it strongly instead.
  std::weak_ptr<asio::io_context> loop_;
  tcp::socket socket_;
  const Executor executor_;  // the loop's; safe to read from journal threads
  Bookie& bookie_;
  protocol::BookieRequestDecoder decoder_;
  const std::shared_ptr<AddsInProgress> in_progress_;
  Clock::time_point read_at_;  // when the bytes being dispatched were read
  log::Logger log_;
  net::Outbox outbox_;             // answers not yet written
  asio::steady_timer resume_;      // cancelled to resume reading (wait_for_answers)
  std::vector<Bookie::Add> adds_;  // decoded from the current read, not yet handed off
  bool closed_ = false;
  // Add answers from journal threads, drained on the loop (answer_add()).
  std::mutex answers_mu_;
  std::vector<AddAnswer> answers_;
  bool drain_queued_ = false;
};

// The bookie served to callers in this process (protocol/local_bookie.h): the requests of
// one serve() are handled as the requests of one socket read are, without the socket or a
// loop of this server. Answers go straight from the bookie's threads to the caller's sink.
class BookieServer::InProcess final : public protocol::LocalBookie,
                                      public std::enable_shared_from_this<InProcess> {
 public:
  // `loop`: one of the server's, for the requests answered on the spot (LAC, info), which
  // may touch the index or the disk and so must not run on the caller's event loop.
  InProcess(Bookie& bookie, std::shared_ptr<asio::io_context> loop, log::Logger log)
      : bookie_(bookie), loop_(std::move(loop)), log_(std::move(log)) {}

  bool serve(std::vector<protocol::LocalBookieRequest> requests,
             std::shared_ptr<const Answer> answer) override {
    // Shared: serving batches run concurrently; close() waits for them, so none touches the
    // bookie after the server stopped.
    std::shared_lock lock(mu_);
    if (closed_) return false;
    const Clock::time_point received = Clock::now();
    std::vector<Bookie::Add> adds;
    for (protocol::LocalBookieRequest& r : requests) {
      const uint64_t id = r.header.request_id();
      if (r.header.op_case() == BookieRequest::kAdd) {
        const int64_t ledger_id = r.header.add().ledger_id();
        const int64_t entry_id = r.header.add().entry_id();
        auto done = [answer, id, ledger_id, entry_id, received](BookieStatus st) {
          add_request_latency().observe(
              std::chrono::duration<double, std::milli>(Clock::now() - received).count());
          BookieResponse response;
          response.set_request_id(id);
          auto* add = response.mutable_add();
          add->set_status(st);
          add->set_ledger_id(ledger_id);
          add->set_entry_id(entry_id);
          (*answer)(std::move(response), BufferChain());
        };
        adds.push_back(Bookie::Add{std::move(*r.header.mutable_add()), r.body.flatten(),
                                   std::move(done)});
        continue;
      }
      if (!adds.empty()) bookie_.add_entries_inline(std::exchange(adds, {}));
      auto reply = [answer](BookieResponse response, BufferChain body) {
        (*answer)(std::move(response), std::move(body));
      };
      const auto op = r.header.op_case();
      if (op == BookieRequest::kRead || op == BookieRequest::kReadRange) {
        serve_request(bookie_, r.header, log_, std::move(reply));  // on the bookie's workers
      } else {
        // Weak: the loop's queue must not keep alive what holds the loop.
        asio::post(*loop_, [weak = weak_from_this(), header = std::move(r.header),
                            reply = std::move(reply)]() mutable {
          if (auto self = weak.lock()) {
            serve_request(self->bookie_, header, self->log_, std::move(reply));
          }
        });
      }
    }
    // Stored on the caller's thread where nothing would wait: one thread hand-off fewer.
    if (!adds.empty()) bookie_.add_entries_inline(std::move(adds));
    return true;
  }

  // Later serve() calls refuse; returns once none is running.
  void close() {
    std::unique_lock lock(mu_);
    closed_ = true;
  }

 private:
  Bookie& bookie_;
  const std::shared_ptr<asio::io_context> loop_;
  const log::Logger log_;
  std::shared_mutex mu_;
  bool closed_ = false;
};

BookieServer::BookieServer(const BookieConfig& config, Bookie& bookie,
                           std::shared_ptr<metadata::MetadataStore> store)
    : config_(config),
      bookie_(bookie),
      store_(std::move(store)),
      log_(log::Logger("bookie").with("bookie", config.bookie_id())),
      adds_in_progress_(std::make_shared<AddsInProgress>(config.max_adds_in_progress)) {}

Result<std::unique_ptr<BookieServer>> BookieServer::start(
    const BookieConfig& config, Bookie& bookie, std::shared_ptr<metadata::MetadataStore> store) {
  std::unique_ptr<BookieServer> s(new BookieServer(config, bookie, std::move(store)));
  MAGNETAR_TRY(s->listen());
  if (s->store_) {
    MAGNETAR_TRY(s->register_bookie());
    s->gc_thread_ = std::thread([srv = s.get()] { srv->gc_loop(); });
    s->session_listener_ = s->store_->add_session_listener(
        s->loops_[0]->get_executor(), [srv = s.get()](metadata::SessionEvent event) {
          if (event != metadata::SessionEvent::kSessionReestablished) return;
          {
            std::lock_guard<std::mutex> lock(srv->gc_mu_);
            srv->reregister_pending_ = true;
          }
          srv->gc_cv_.notify_all();
        });
  }
  bookie.on_read_only([srv = s.get()] { srv->on_read_only(); });
  return s;
}

Status BookieServer::listen() {
  for (int i = 0; i < std::max(1, config_.num_io_threads); ++i) {
    loops_.push_back(std::make_shared<asio::io_context>(1));
    guards_.emplace_back(loops_.back()->get_executor());
  }
  boost::system::error_code ec;
  auto address = asio::ip::make_address(config_.advertised_address, ec);
  if (ec) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("advertisedAddress '{}' is not an IP address",
                              config_.advertised_address));
  }
  acceptor_ = std::make_unique<tcp::acceptor>(*loops_[0]);
  tcp::endpoint endpoint(address, static_cast<uint16_t>(config_.bookie_port));
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Errc::kUnavailable, fmt::format("cannot listen on {}:{}: {}",
                                                  config_.advertised_address, config_.bookie_port,
                                                  ec.message()));
  }
  port_ = acceptor_->local_endpoint().port();
  config_.bookie_port = port_;
  log_ = log::Logger("bookie").with("bookie", config_.bookie_id());
  asio::co_spawn(*loops_[0], accept_loop(), asio::detached);
  for (auto& loop : loops_) {
    threads_.emplace_back([l = loop.get()] { l->run(); });
  }
  log_.info("serving the bookie protocol on {}:{}", config_.advertised_address, port_);
  return Status::OK();
}

Task<void> BookieServer::accept_loop() {
  while (true) {
    std::shared_ptr<asio::io_context> loop = loops_[next_loop_++ % loops_.size()];
    tcp::socket socket(*loop);
    boost::system::error_code ec;
    co_await acceptor_->async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      log_.warn("accept failed: {}", ec.message());
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto conn = std::make_shared<Connection>(loop, std::move(socket), bookie_,
                                             static_cast<uint32_t>(config_.max_frame_size),
                                             adds_in_progress_, log_);
    {
      std::lock_guard<std::mutex> lock(connections_mu_);
      std::erase_if(connections_, [](const std::weak_ptr<Connection>& w) { return w.expired(); });
      connections_.push_back(conn);
    }
    asio::post(*loop, [conn] { conn->start(); });
  }
}

Status BookieServer::register_bookie() {
  nlohmann::json info = {{"bookieId", config_.bookie_id()},
                         {"readOnly", bookie_.read_only()}};
  const std::string path = "/ledgers/available/" + config_.bookie_id();
  const std::string value = info.dump();
  // A previous process of this bookie (killed and restarted quickly) may still hold the node
  // through its not-yet-expired session: wait for it to go, as BookKeeper does. Startup
  // only, not an event loop: blocking waits are fine here.
  const auto deadline =
      std::chrono::steady_clock::now() + 2 * store_->session_timeout() + std::chrono::seconds(5);
  bool told = false;
  while (true) {
    auto r = run_sync<Result<metadata::PutResult>>([&]() {
      return store_->put_recursive(path, value, metadata::PutOptions{-1, true, false});
    });
    if (r.ok()) return Status::OK();
    if (!r.status().is(Errc::kBadVersion)) {
      return Status(r.status().code(), fmt::format("cannot register bookie at {}: {}", path,
                                                   r.status().message()));
    }
    auto existing = run_sync<Result<std::optional<metadata::GetResult>>>(
        [&]() { return store_->get(path); });
    if (existing.ok() && existing->has_value() &&
        (*existing)->stat.ephemeral_owner == store_->session_id()) {
      return Status::OK();  // ours already
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status(Errc::kAlreadyExists,
                    fmt::format("cannot register bookie at {}: another live process holds "
                                "this bookie id",
                                path));
    }
    if (!told) {
      log_.warn("{} is still held by a previous process's session; waiting for it to expire",
                path);
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

void BookieServer::on_read_only() {
  if (!store_) return;
  // Called on a journal or checkpoint thread: hand the metadata write to gc_thread_.
  {
    std::lock_guard<std::mutex> lock(gc_mu_);
    read_only_pending_ = true;
  }
  gc_cv_.notify_all();
}

void BookieServer::register_read_only() {
  std::string path = "/ledgers/available/readonly/" + config_.bookie_id();
  auto r = run_sync<Result<metadata::PutResult>>([&]() {
    return store_->put_recursive(path, "", metadata::PutOptions{std::nullopt, true, false});
  });
  if (!r.ok()) log_.warn("cannot register as read-only: {}", r.status().to_string());
}

Status BookieServer::run_gc() {
  if (!store_) return Status(Errc::kInvalidArgument, "garbage collection needs a metadata store");
  // What this bookie holds is taken before the listing: a ledger's metadata is written before
  // any of its entries reaches a bookie, so a ledger held now and missing from a later
  // listing was deleted, while one created during the listing is not a candidate at all.
  const std::vector<LedgerId> held = bookie_.ledgers();
  auto listed = run_sync<Result<std::vector<int64_t>>>(
      [&]() { return metadata::list_ledger_ids(*store_); });
  if (!listed.ok()) return listed.status();  // never drop anything on a failed listing
  // (No second lookup of each candidate: on ZooKeeper every path read stays watched for the
  // session's lifetime, and a deleted ledger's path would never fire.)
  std::vector<LedgerId> deleted;
  for (LedgerId id : held) {
    if (!std::binary_search(listed->begin(), listed->end(), id.value())) deleted.push_back(id);
  }
  return bookie_.garbage_collect(deleted).status();
}

void BookieServer::gc_loop() {
  std::unique_lock<std::mutex> lock(gc_mu_);
  auto next_gc = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(config_.gc_wait_time_ms);
  while (!gc_stopping_) {
    gc_cv_.wait_until(lock, next_gc,
                      [&] { return gc_stopping_ || read_only_pending_ || reregister_pending_; });
    if (gc_stopping_) break;
    if (reregister_pending_) {
      reregister_pending_ = false;
      lock.unlock();
      log_.warn("the metadata session was lost: registering the bookie again");
      if (Status st = register_bookie(); !st.ok()) {
        log_.error("registering again failed: {}", st.to_string());
      } else if (bookie_.read_only()) {
        register_read_only();
      }
      lock.lock();
      continue;
    }
    if (read_only_pending_) {
      read_only_pending_ = false;
      lock.unlock();
      register_read_only();
      lock.lock();
      continue;
    }
    if (std::chrono::steady_clock::now() < next_gc) continue;
    next_gc = std::chrono::steady_clock::now() +
              std::chrono::milliseconds(config_.gc_wait_time_ms);
    lock.unlock();
    Status st = run_gc();
    if (!st.ok()) log_.warn("garbage collection skipped: {}", st.to_string());
    lock.lock();
  }
}

std::shared_ptr<protocol::LocalBookie> BookieServer::in_process() {
  std::lock_guard<std::mutex> lock(connections_mu_);
  if (!in_process_) in_process_ = std::make_shared<InProcess>(bookie_, loops_.front(), log_);
  return in_process_;
}

void BookieServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(connections_mu_);
    if (in_process_) in_process_->close();
  }
  if (store_ && session_listener_ != 0) store_->remove_listener(session_listener_);
  {
    std::lock_guard<std::mutex> lock(gc_mu_);
    gc_stopping_ = true;
  }
  gc_cv_.notify_all();
  if (gc_thread_.joinable()) gc_thread_.join();
  if (acceptor_) {
    asio::post(*loops_[0], [a = acceptor_.get()] {
      boost::system::error_code ec;
      a->close(ec);
    });
  }
  {
    std::lock_guard<std::mutex> lock(connections_mu_);
    for (auto& weak : connections_) {
      if (auto conn = weak.lock()) {
        asio::post(conn->executor(), [conn] { conn->close(); });
      }
    }
    connections_.clear();
  }
  adds_in_progress_->clear();
  // Let the loops finish their connections' coroutines; force whatever is left after 2 s.
  guards_.clear();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& loop : loops_) {
    while (!loop->stopped() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    loop->stop();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

BookieServer::~BookieServer() { stop(); }

}  // namespace magnetar::bookie
