#include "ledger/bookie_client.h"

#include <charconv>
#include <mutex>
#include <utility>
#include <optional>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <fmt/format.h>

#include "common/metrics.h"
#include "net/outbox.h"

namespace magnetar::ledger {

namespace {
constexpr std::chrono::milliseconds kReconnectQuarantine{1000};
}  // namespace

using asio::ip::tcp;
using bookie_wire::BookieRequest;
using bookie_wire::BookieResponse;
using Clock = std::chrono::steady_clock;

namespace {

// Each read from a bookie socket lands in a fresh block of this size; decoded entries are
// slices of it (no copy when a frame arrives in one read).
constexpr size_t kReadChunk = 64 * 1024;
// Bounds of one gathered write (IOV_MAX is 1024 on Linux).
constexpr size_t kMaxWritePieces = 1024;
constexpr size_t kMaxWriteBytes = 4 << 20;

const char* op_name(size_t op) {
  static constexpr const char* kNames[] = {"add", "read", "read_lac", "info", "read_range"};
  return kNames[op];
}

// "a.b.c.d:port" -> endpoint; only IPv4 literals (see the header).
Result<tcp::endpoint> parse_bookie_id(const std::string& bookie) {
  auto bad = [&bookie] {
    return Status(Errc::kInvalidArgument,
                  fmt::format("bookie id '{}' is not <IPv4 address>:<port>", bookie));
  };
  const size_t colon = bookie.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad();
  boost::system::error_code ec;
  auto address = asio::ip::make_address_v4(bookie.substr(0, colon), ec);
  if (ec) return bad();
  unsigned port = 0;
  const char* first = bookie.data() + colon + 1;
  const char* last = bookie.data() + bookie.size();
  auto [end, err] = std::from_chars(first, last, port);
  if (err != std::errc() || end != last || first == last || port == 0 || port > 65535) {
    return bad();
  }
  return tcp::endpoint(address, static_cast<uint16_t>(port));
}

}  // namespace

bool is_bookie_address(std::string_view id) {
  return parse_bookie_id(std::string(id)).ok();
}

struct BookieClient::OpMetrics {
  std::shared_ptr<metrics::Counter> requests;
  std::shared_ptr<metrics::Counter> failures;
  std::shared_ptr<metrics::Histogram> latency_ms;
};

// One TCP connection to one bookie, and the requests pending on it.
//
// Lives on the client's executor; all its state is touched only there. Owned by shared_ptr:
// the client's map, run() (connect, then the read loop) and the write loop each hold one, so
// it stays alive until they are done, whether or not the client still exists. It holds
// nothing of the client's but the shared metrics.
//
// A request is an entry in pending_ (by request id) holding its completion. The answer, the
// deadline or the connection's failure completes it, exactly once, on the executor. One
// timer per connection watches the earliest deadline (answers usually come long before it,
// so the timer rarely fires): no timer per request.
//
// States: connecting (requests queue in outbox_) -> connected -> dead. fail() is the only
// way to dead: it closes the socket, wakes every coroutine of the connection so that it
// exits, and completes every pending request with one status. A dead connection never
// comes back; the client makes a new one.
class BookieClient::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Executor executor, std::string bookie, tcp::endpoint endpoint,
             const BookieClientOptions& options, log::Logger log,
             std::array<std::shared_ptr<OpMetrics>, kOps> metrics,
             std::shared_ptr<protocol::LocalBookie> local = nullptr)
      : executor_(executor),
        local_(std::move(local)),
        bookie_(std::move(bookie)),
        endpoint_(endpoint),
        connect_timeout_(options.connect_timeout),
        metrics_(std::move(metrics)),
        socket_(executor),
        connect_timer_(executor),
        deadline_timer_(executor),
        outbox_(executor,
                net::OutboxOptions{.max_pieces = kMaxWritePieces, .max_bytes = kMaxWriteBytes}),
        decoder_(options.max_frame_size),
        log_(std::move(log)) {}

  // Starts connecting in the background (a bookie in this process is there at once).
  void start() {
    auto self = shared_from_this();
    if (local_) {
      connected_ = true;
      inbox_ = std::make_shared<LocalInbox>(executor_, self);
      answer_ = std::make_shared<const protocol::LocalBookie::Answer>(
          [inbox = inbox_](bookie_wire::BookieResponse header, BufferChain body) {
            LocalInbox::deliver(inbox, std::move(header), std::move(body));
          });
      return;
    }
    asio::co_spawn(executor_, [self]() { return self->run(); }, asio::detached);
  }

  bool dead() const { return dead_; }
  // Dead without ever having connected, less than `window` ago: the bookie is down, and
  // trying again at once would only cost another failed connect per request.
  bool unreachable_within(std::chrono::milliseconds window) const {
    return dead_ && !connected_ && Clock::now() - died_at_ < window;
  }

  // Queues `request` (+ `body`); `done` gets the answer, kTimeout once `timeout` passed, or
  // the connection's failure. Runs `done` later on the executor, never inside this call.
  void send(Op op, BookieRequest request, const BufferChain& body,
            std::chrono::milliseconds timeout, Callback done) {
    OpMetrics& m = *metrics_[static_cast<size_t>(op)];
    m.requests->inc();
    if (dead_) {
      m.failures->inc();
      Status st(Errc::kUnavailable, fmt::format("bookie {}: connection closed", bookie_));
      asio::post(executor_, [done = std::move(done), st]() { done(st); });
      return;
    }
    const uint64_t id = next_request_id_++;
    request.set_request_id(id);
    const Clock::time_point now = Clock::now();
    const Clock::time_point deadline = now + timeout;
    pending_.emplace(id, Pending{op, now, deadline, std::move(done)});
    if (local_) {
      // The requests of one turn of the loop go to the bookie together, as one socket read's.
      local_batch_.push_back(protocol::LocalBookieRequest{std::move(request), body});
      if (local_batch_.size() == 1) {
        asio::post(executor_, [self = shared_from_this()] { self->serve_local_batch(); });
      }
    } else {
      outbox_.push(protocol::encode_bookie_frame(request, body));
    }
    if (!deadline_armed_ || deadline < armed_for_) arm_deadline(deadline);
  }

  // Kills the connection (idempotent): every pending request completes with `code`.
  void fail(Errc code, const std::string& why) {
    if (dead_) return;
    dead_ = true;
    died_at_ = Clock::now();
    Status status(code, fmt::format("bookie {}: {}", bookie_, why));
    if (code == Errc::kCancelled) {
      log_.debug("connection closed: {}", why);
    } else {
      log_.warn("connection failed, {} requests pending: {}", pending_.size(), why);
    }
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);  // aborts the connect, the read and the write in progress
    connect_timer_.cancel();
    deadline_timer_.cancel();
    outbox_.close();
    local_batch_.clear();
    if (inbox_) inbox_->close();
    // Completed from the executor: fail() may run inside a caller's own call (disconnect,
    // the client's destructor).
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) metrics_[static_cast<size_t>(p.op)]->failures->inc();
    asio::post(executor_, [pending = std::move(pending), status]() mutable {
      for (auto& [id, p] : pending) p.done(status);
    });
  }

 private:
  struct Pending {
    Op op;
    Clock::time_point sent;
    Clock::time_point deadline;
    Callback done;
  };

  // The answers of a bookie in this process, handed over from its threads: the first of a
  // burst (a journal group's) queues one drain on the executor, the rest ride along. Closed
  // with the connection: later answers are dropped and nothing more is posted, so nothing is
  // queued on the executor once the client is gone.
  class LocalInbox {
   public:
    LocalInbox(Executor executor, std::weak_ptr<Connection> conn)
        : executor_(std::move(executor)), conn_(std::move(conn)) {}

    static void deliver(const std::shared_ptr<LocalInbox>& inbox,
                        bookie_wire::BookieResponse header, BufferChain body) {
      std::lock_guard lock(inbox->mu_);
      if (inbox->closed_) return;
      inbox->answers_.push_back(ResponseFrame{std::move(header), body.flatten()});
      if (inbox->drain_queued_) return;
      inbox->drain_queued_ = true;
      asio::post(inbox->executor_, [inbox] { inbox->drain(); });
    }
    void close() {
      std::lock_guard lock(mu_);
      closed_ = true;
      answers_.clear();
    }

   private:
    void drain() {
      std::vector<ResponseFrame> answers;
      {
        std::lock_guard lock(mu_);
        answers.swap(answers_);
        drain_queued_ = false;
      }
      auto conn = conn_.lock();
      if (!conn) return;
      for (ResponseFrame& a : answers) {
        if (conn->dead_) return;
        conn->on_response(std::move(a));
      }
    }

    const Executor executor_;
    const std::weak_ptr<Connection> conn_;
    std::mutex mu_;
    bool closed_ = false;
    bool drain_queued_ = false;
    std::vector<ResponseFrame> answers_;
  };

  void serve_local_batch() {
    if (dead_ || local_batch_.empty()) return;
    if (!local_->serve(std::exchange(local_batch_, {}), answer_)) {
      fail(Errc::kUnavailable, "the bookie has stopped");
    }
  }

  // Points the deadline timer at `when` (earlier than whatever it watched).
  void arm_deadline(Clock::time_point when) {
    deadline_armed_ = true;
    armed_for_ = when;
    const uint64_t generation = ++deadline_generation_;
    deadline_timer_.expires_at(when);  // a wait already queued completes as aborted
    std::weak_ptr<Connection> weak = shared_from_this();
    deadline_timer_.async_wait([weak, generation](const boost::system::error_code& ec) {
      auto c = weak.lock();
      if (ec || !c || c->deadline_generation_ != generation) return;
      c->expire();
    });
  }

  // Fails every request whose deadline passed, then watches the next deadline.
  void expire() {
    deadline_armed_ = false;
    if (dead_) return;
    const Clock::time_point now = Clock::now();
    std::vector<std::pair<uint64_t, Pending>> expired;
    std::optional<Clock::time_point> next;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.deadline <= now) {
        expired.emplace_back(it->first, std::move(it->second));
        it = pending_.erase(it);
        continue;
      }
      if (!next || it->second.deadline < *next) next = it->second.deadline;
      ++it;
    }
    if (next) arm_deadline(*next);
    for (auto& [id, p] : expired) {
      metrics_[static_cast<size_t>(p.op)]->failures->inc();
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - p.sent);
      // Forgotten already: a late answer is dropped.
      p.done(Status(Errc::kTimeout, fmt::format("bookie {}: no answer to request {} within {} ms",
                                                bookie_, id, waited.count())));
    }
  }

  // Connects (bounded by connect_timeout), starts the write loop, then reads until failure.
  Task<void> run() {
    auto self = shared_from_this();
    if (dead_) co_return;  // failed before it started: do not reopen the socket
    // The timer holds only a weak reference; fail() or the connect completing cancels it.
    std::weak_ptr<Connection> weak = self;
    const auto limit = connect_timeout_.count();
    connect_timer_.expires_after(connect_timeout_);
    connect_timer_.async_wait([weak, limit](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto c = weak.lock()) {
        c->fail(Errc::kUnavailable, fmt::format("connect timed out after {} ms", limit));
      }
    });
    boost::system::error_code ec;
    co_await socket_.async_connect(endpoint_, asio::redirect_error(asio::use_awaitable, ec));
    connect_timer_.cancel();
    if (dead_) co_return;
    if (ec) {
      fail(Errc::kUnavailable, fmt::format("cannot connect: {}", ec.message()));
      co_return;
    }
    socket_.set_option(tcp::no_delay(true), ec);
    connected_ = true;
    log_.debug("connected");
    // What send() queues goes out in gathered writes; a failed write fails the connection.
    auto write_failed = [this](const boost::system::error_code& ec) {
      fail(Errc::kUnavailable, fmt::format("write failed: {}", ec.message()));
    };
    asio::co_spawn(
        executor_,
        [self, write_failed]() { return self->outbox_.run(self->socket_, write_failed); },
        asio::detached);
    co_await read_loop();
  }

  Task<void> read_loop() {
    while (!dead_) {
      Buffer chunk = Buffer::allocate(kReadChunk);
      boost::system::error_code ec;
      const size_t n = co_await socket_.async_read_some(
          asio::buffer(chunk.mutable_data(), chunk.size()),
          asio::redirect_error(asio::use_awaitable, ec));
      if (dead_) co_return;
      if (ec) {
        fail(Errc::kUnavailable, ec == asio::error::eof
                                     ? std::string("closed by the bookie")
                                     : fmt::format("read failed: {}", ec.message()));
        co_return;
      }
      chunk.truncate(n);
      decoder_.feed(std::move(chunk));
      while (!dead_) {
        auto frame = decoder_.next();
        if (!frame.ok()) {
          fail(Errc::kUnavailable, fmt::format("bad frame: {}", frame.status().to_string()));
          co_return;
        }
        if (!frame->has_value()) break;
        on_response(std::move(**frame));
      }
    }
  }

  void on_response(ResponseFrame frame) {
    const uint64_t id = frame.header.request_id();
    auto it = pending_.find(id);
    if (it == pending_.end()) {
      log_.debug("dropping the answer to request {}: no longer waited for", id);
      return;
    }
    Pending p = std::move(it->second);
    pending_.erase(it);
    OpMetrics& m = *metrics_[static_cast<size_t>(p.op)];
    if (frame.header.op_case() == BookieResponse::OP_NOT_SET && frame.header.has_unsupported_op()) {
      // An older bookie: this operation fails, the connection is fine.
      m.failures->inc();
      Status st(Errc::kNotSupported,
                fmt::format("bookie {} does not support the {} operation", bookie_, op_name(static_cast<size_t>(p.op))));
      asio::post(executor_, [done = std::move(p.done), st]() { done(st); });
      return;
    }
    if (frame.header.op_case() != expected_op(p.op)) {
      const std::string why = fmt::format("answered request {} with op {} instead of {}", id,
                                          static_cast<int>(frame.header.op_case()),
                                          static_cast<int>(expected_op(p.op)));
      m.failures->inc();
      Status st(Errc::kUnavailable, fmt::format("bookie {}: {}", bookie_, why));
      asio::post(executor_, [done = std::move(p.done), st]() { done(st); });
      fail(Errc::kUnavailable, why);
      return;
    }
    m.latency_ms->observe(
        std::chrono::duration<double, std::milli>(Clock::now() - p.sent).count());
    p.done(std::move(frame));
  }

  static BookieResponse::OpCase expected_op(Op op) {
    switch (op) {
      case Op::kAdd: return BookieResponse::kAdd;
      case Op::kRead: return BookieResponse::kRead;
      case Op::kReadLac: return BookieResponse::kReadLac;
      case Op::kInfo: return BookieResponse::kInfo;
      case Op::kReadRange: return BookieResponse::kReadRange;
    }
    return BookieResponse::OP_NOT_SET;
  }

  const Executor executor_;
  // A bookie in this process: requests go to it by calls, answers come back through inbox_.
  const std::shared_ptr<protocol::LocalBookie> local_;
  std::shared_ptr<LocalInbox> inbox_;
  std::shared_ptr<const protocol::LocalBookie::Answer> answer_;
  std::vector<protocol::LocalBookieRequest> local_batch_;  // queued this turn of the loop
  const std::string bookie_;
  const tcp::endpoint endpoint_;
  const std::chrono::milliseconds connect_timeout_;
  const std::array<std::shared_ptr<OpMetrics>, kOps> metrics_;
  tcp::socket socket_;
  asio::steady_timer connect_timer_;
  asio::steady_timer deadline_timer_;  // at the earliest pending deadline, when armed
  bool deadline_armed_ = false;
  Clock::time_point armed_for_{};
  uint64_t deadline_generation_ = 0;  // a wait of an older generation was superseded
  net::Outbox outbox_;                // encoded frames not yet handed to the socket
  protocol::BookieResponseDecoder decoder_;
  log::Logger log_;
  std::unordered_map<uint64_t, Pending> pending_;  // by request id
  uint64_t next_request_id_ = 1;
  bool dead_ = false;
  bool connected_ = false;
  Clock::time_point died_at_{};
};

BookieClient::BookieClient(Executor executor, BookieClientOptions options)
    : executor_(std::move(executor)), options_(options), log_(log::Logger("ledger")) {
  auto& registry = metrics::default_registry();
  auto* requests = registry
                       .counter("magnetar_ledger_bookie_requests_total",
                                "Requests sent to bookies", {"op"})
                       .value();
  auto* failures = registry
                       .counter("magnetar_ledger_bookie_request_failures_total",
                                "Bookie requests that got no answer (transport error, timeout, "
                                "cancellation)",
                                {"op"})
                       .value();
  auto* latency = registry
                      .histogram("magnetar_ledger_bookie_request_latency_ms",
                                 "Time from sending a bookie request to its answer", {"op"})
                      .value();
  for (size_t op = 0; op < kOps; ++op) {
    auto m = std::make_shared<OpMetrics>();
    m->requests = requests->get(op_name(op));
    m->failures = failures->get(op_name(op));
    m->latency_ms = latency->get(op_name(op));
    metrics_[op] = std::move(m);
  }
}

BookieClient::~BookieClient() { close_all(); }

void BookieClient::close_all() {
  closed_ = true;
  auto connections = std::move(connections_);
  connections_.clear();
  for (auto& [bookie, conn] : connections) conn->fail(Errc::kCancelled, "client closed");
}

Task<void> BookieClient::close() {
  close_all();
  co_return;
}

void BookieClient::disconnect(const std::string& bookie) {
  auto it = connections_.find(bookie);
  if (it == connections_.end()) return;
  std::shared_ptr<Connection> conn = std::move(it->second);
  connections_.erase(it);
  conn->fail(Errc::kUnavailable, "disconnected by the client");
}

Result<std::shared_ptr<BookieClient::Connection>> BookieClient::connection_for(
    const std::string& bookie) {
  if (closed_) {
    return Status(Errc::kCancelled, fmt::format("bookie {}: client closed", bookie));
  }
  auto it = connections_.find(bookie);
  if (it != connections_.end() && !it->second->dead()) return it->second;
  // Quarantine, as BookKeeper's client does: at most one connect attempt per second to a
  // bookie that refused the last one; requests fail at once meanwhile.
  if (it != connections_.end() && it->second->unreachable_within(kReconnectQuarantine)) {
    return Status(Errc::kUnavailable,
                  fmt::format("bookie {}: unreachable (the last connect failed under {} ms ago)",
                              bookie, kReconnectQuarantine.count()));
  }
  MAGNETAR_ASSIGN_OR_RETURN(tcp::endpoint endpoint, parse_bookie_id(bookie));
  std::shared_ptr<protocol::LocalBookie> local;
  if (auto dial = options_.dial_overrides.find(bookie); dial != options_.dial_overrides.end()) {
    MAGNETAR_ASSIGN_OR_RETURN(endpoint, parse_bookie_id(dial->second));
  } else if (auto in_process = options_.local_bookies.find(bookie);
             in_process != options_.local_bookies.end()) {
    local = in_process->second;
  }
  auto conn = std::make_shared<Connection>(executor_, bookie, endpoint, options_,
                                           log_.with("bookie", bookie), metrics_,
                                           std::move(local));
  conn->start();
  connections_[bookie] = conn;
  return conn;
}

void BookieClient::send(Op op, const std::string& bookie, BookieRequest request,
                        const BufferChain& body, std::chrono::milliseconds timeout,
                        Callback done) {
  auto conn = connection_for(bookie);
  if (!conn.ok()) {
    const OpMetrics& m = *metrics_[static_cast<size_t>(op)];
    m.requests->inc();
    m.failures->inc();
    asio::post(executor_, [done = std::move(done), st = conn.status()]() { done(st); });
    return;
  }
  (*conn)->send(op, std::move(request), body, timeout, std::move(done));
}

Task<Result<BookieClient::ResponseFrame>> BookieClient::call(Op op, std::string bookie,
                                                             BookieRequest request,
                                                             BufferChain body,
                                                             std::chrono::milliseconds timeout) {
  // Runs before the first suspension; after it only the coroutine's own state is used (the
  // client may be gone by the time the answer arrives).
  auto start = [this, op, bookie = std::move(bookie), request = std::move(request),
                body = std::move(body), timeout](Callback done) mutable {
    send(op, bookie, std::move(request), body, timeout, std::move(done));
  };
  return await_callback<Result<ResponseFrame>>(std::move(start));
}

void BookieClient::async_add(const std::string& bookie, bookie_wire::AddRequest request,
                             const BufferChain& entry, AddCallback done) {
  BookieRequest r;
  *r.mutable_add() = std::move(request);
  send(Op::kAdd, bookie, std::move(r), entry, options_.request_timeout,
       [done = std::move(done)](Result<ResponseFrame> response) {
         if (!response.ok()) return done(std::move(response).status());
         done(AddResult{response->header.add().status()});
       });
}

Task<Result<AddResult>> BookieClient::add(std::string bookie, bookie_wire::AddRequest request,
                                          BufferChain entry) {
  BookieRequest r;
  *r.mutable_add() = std::move(request);
  auto response = co_await call(Op::kAdd, std::move(bookie), std::move(r), std::move(entry),
                                options_.request_timeout);
  if (!response.ok()) co_return std::move(response).status();
  AddResult out;
  out.status = response->header.add().status();
  co_return out;
}

Task<Result<ReadResult>> BookieClient::read(std::string bookie, bookie_wire::ReadRequest request) {
  std::chrono::milliseconds timeout = options_.request_timeout;
  if (request.has_timeout_ms()) timeout += std::chrono::milliseconds(request.timeout_ms());
  BookieRequest r;
  *r.mutable_read() = std::move(request);
  BufferChain no_body;
  auto response = co_await call(Op::kRead, std::move(bookie), std::move(r), std::move(no_body),
                                timeout);
  if (!response.ok()) co_return std::move(response).status();
  ReadResult out;
  const bookie_wire::ReadResponse& read = response->header.read();
  out.status = read.status();
  if (read.has_lac()) out.lac = read.lac();
  if (out.status == bookie_wire::OK) out.entry = std::move(response->body);
  co_return out;
}

void BookieClient::async_read_range(const std::string& bookie,
                                    bookie_wire::ReadRangeRequest request,
                                    ReadRangeCallback done) {
  // Room for the frame's sizes and header besides the entries.
  const uint64_t room = options_.max_frame_size > (64u << 10) ? options_.max_frame_size - (64u << 10)
                                                               : options_.max_frame_size / 2;
  request.set_max_bytes(request.has_max_bytes() ? std::min<uint64_t>(request.max_bytes(), room)
                                                : room);
  BookieRequest r;
  *r.mutable_read_range() = std::move(request);
  send(Op::kReadRange, bookie, std::move(r), BufferChain(), options_.request_timeout,
       [done = std::move(done), bookie](Result<ResponseFrame> response) {
         if (!response.ok()) return done(std::move(response).status());
         const bookie_wire::ReadRangeResponse& rr = response->header.read_range();
         ReadRangeResult out;
         out.status = rr.status();
         if (rr.has_lac()) out.lac = rr.lac();
         if (out.status == bookie_wire::OK) {
           auto entries = protocol::split_read_range(rr, response->body);
           if (!entries.ok()) {
             return done(Status(Errc::kCorruption, fmt::format("bookie {}: {}", bookie,
                                                               entries.status().message())));
           }
           out.entries = std::move(entries).value();
         }
         done(std::move(out));
       });
}

Task<Result<bookie_wire::ReadLacResponse>> BookieClient::read_lac(std::string bookie,
                                                                  int64_t ledger_id) {
  BookieRequest r;
  r.mutable_read_lac()->set_ledger_id(ledger_id);
  BufferChain no_body;
  auto response = co_await call(Op::kReadLac, std::move(bookie), std::move(r),
                                std::move(no_body), options_.request_timeout);
  if (!response.ok()) co_return std::move(response).status();
  co_return std::move(*response->header.mutable_read_lac());
}

Task<Result<bookie_wire::BookieInfoResponse>> BookieClient::info(std::string bookie) {
  BookieRequest r;
  r.mutable_info();
  BufferChain no_body;
  auto response = co_await call(Op::kInfo, std::move(bookie), std::move(r), std::move(no_body),
                                options_.request_timeout);
  if (!response.ok()) co_return std::move(response).status();
  co_return std::move(*response->header.mutable_info());
}

}  // namespace magnetar::ledger
