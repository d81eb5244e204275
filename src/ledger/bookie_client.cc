#include "ledger/bookie_client.h"

#include <charconv>
#include <deque>
#include <optional>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "common/metrics.h"

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

const char* op_name(size_t op) {
  static constexpr const char* kNames[] = {"add", "read", "read_lac", "info"};
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

struct BookieClient::OpMetrics {
  std::shared_ptr<metrics::Counter> requests;
  std::shared_ptr<metrics::Counter> failures;
  std::shared_ptr<metrics::Histogram> latency_ms;
};

// One TCP connection to one bookie, and the requests pending on it.
//
// Lives on the client's executor; all its state is touched only there. Owned by shared_ptr:
// the client's map, run() (connect, then the read loop), the write loop, and every request
// coroutine waiting on it each hold one, so it stays alive until the last of them is done,
// whether or not the client still exists. It holds nothing of the client's.
//
// States: connecting (requests queue in outbox_) -> connected -> dead. fail() is the only
// way to dead: it closes the socket, wakes every coroutine of the connection so that it
// exits, and completes every pending request with one status. A dead connection never
// comes back; the client makes a new one.
class BookieClient::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Executor executor, std::string bookie, tcp::endpoint endpoint,
             const BookieClientOptions& options, log::Logger log)
      : executor_(executor),
        bookie_(std::move(bookie)),
        endpoint_(endpoint),
        connect_timeout_(options.connect_timeout),
        socket_(executor),
        connect_timer_(executor),
        wakeup_(executor),
        decoder_(options.max_frame_size),
        log_(std::move(log)) {
    wakeup_.expires_at(asio::steady_timer::time_point::max());
  }

  // Starts connecting in the background.
  void start() {
    auto self = shared_from_this();
    asio::co_spawn(executor_, [self]() { return self->run(); }, asio::detached);
  }

  bool dead() const { return dead_; }
  // Dead without ever having connected, less than `window` ago: the bookie is down, and
  // trying again at once would only cost another failed connect per request.
  bool unreachable_within(std::chrono::milliseconds window) const {
    return dead_ && !connected_ && Clock::now() - died_at_ < window;
  }

  // Queues `request` and waits for its answer, `timeout`, or the connection's failure.
  // `expected` is the op the answer must carry.
  Task<Result<ResponseFrame>> call(BookieRequest request, BufferChain body,
                                   BookieResponse::OpCase expected,
                                   std::chrono::milliseconds timeout) {
    // Held across the wait: the client may drop (or be destroyed with) this connection
    // while the request is in flight.
    auto self = shared_from_this();
    if (dead_) {
      co_return Status(Errc::kUnavailable, fmt::format("bookie {}: connection closed", bookie_));
    }
    const uint64_t id = next_request_id_++;
    request.set_request_id(id);
    auto pending = std::make_shared<Pending>(executor_, expected);
    pending->deadline.expires_after(timeout);
    pending_.emplace(id, pending);
    outbox_.push_back(protocol::encode_bookie_frame(request, body));
    wakeup_.cancel_one();

    boost::system::error_code ec;  // operation_aborted is how finish() wakes us
    co_await pending->deadline.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (pending->outcome) co_return std::move(*pending->outcome);
    // The deadline passed first. Forget the request so that a late answer is dropped.
    pending_.erase(id);
    co_return Status(Errc::kTimeout, fmt::format("bookie {}: no answer to request {} within {} ms",
                                                 bookie_, id, timeout.count()));
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
    wakeup_.cancel();
    outbox_.clear();
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) finish(*p, status);
  }

 private:
  // One request in flight. Shared by the pending_ map and the coroutine waiting on it, which
  // sleeps on `deadline` until the answer (or the failure) cancels it.
  struct Pending {
    Pending(const Executor& executor, BookieResponse::OpCase expected)
        : deadline(executor), op(expected) {}
    asio::steady_timer deadline;
    BookieResponse::OpCase op;
    std::optional<Result<ResponseFrame>> outcome;
  };

  // Completes a request: stores the outcome and wakes its coroutine (which resumes later,
  // through the executor, never inside this call).
  static void finish(Pending& p, Result<ResponseFrame> outcome) {
    p.outcome.emplace(std::move(outcome));
    p.deadline.cancel();
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
    asio::co_spawn(executor_, [self]() { return self->write_loop(); }, asio::detached);
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
    std::shared_ptr<Pending> p = std::move(it->second);
    pending_.erase(it);
    if (frame.header.op_case() != p->op) {
      const std::string why = fmt::format("answered request {} with op {} instead of {}", id,
                                          static_cast<int>(frame.header.op_case()),
                                          static_cast<int>(p->op));
      finish(*p, Status(Errc::kUnavailable, fmt::format("bookie {}: {}", bookie_, why)));
      fail(Errc::kUnavailable, why);
      return;
    }
    finish(*p, std::move(frame));
  }

  // Writes everything queued in one gathered write, sleeping on wakeup_ when nothing is.
  Task<void> write_loop() {
    auto self = shared_from_this();
    std::vector<asio::const_buffer> iov;
    while (!dead_) {
      if (outbox_.empty()) {
        boost::system::error_code ignored;  // cancelled by call() or fail()
        co_await wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        continue;
      }
      std::deque<BufferChain> batch;
      batch.swap(outbox_);
      iov.clear();
      for (const BufferChain& frame : batch) {
        for (const Buffer& b : frame.buffers()) iov.emplace_back(b.data(), b.size());
      }
      boost::system::error_code ec;
      co_await asio::async_write(socket_, iov, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        fail(Errc::kUnavailable, fmt::format("write failed: {}", ec.message()));
        co_return;
      }
    }
  }

  const Executor executor_;
  const std::string bookie_;
  const tcp::endpoint endpoint_;
  const std::chrono::milliseconds connect_timeout_;
  tcp::socket socket_;
  asio::steady_timer connect_timer_;
  asio::steady_timer wakeup_;  // never expires: cancelled to wake the write loop
  protocol::BookieResponseDecoder decoder_;
  log::Logger log_;
  std::deque<BufferChain> outbox_;  // encoded frames not yet handed to the socket
  std::unordered_map<uint64_t, std::shared_ptr<Pending>> pending_;  // by request id
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
  auto conn = std::make_shared<Connection>(executor_, bookie, endpoint, options_,
                                           log_.with("bookie", bookie));
  conn->start();
  connections_[bookie] = conn;
  return conn;
}

Task<Result<BookieClient::ResponseFrame>> BookieClient::call(Op op, std::string bookie,
                                                             BookieRequest request,
                                                             BufferChain body,
                                                             std::chrono::milliseconds timeout) {
  // Copied before the first suspension: from the co_await below on, `this` may be destroyed.
  std::shared_ptr<OpMetrics> metrics = metrics_[static_cast<size_t>(op)];
  metrics->requests->inc();
  auto conn = connection_for(bookie);
  if (!conn.ok()) {
    metrics->failures->inc();
    co_return std::move(conn).status();
  }
  BookieResponse::OpCase expected = BookieResponse::OP_NOT_SET;
  switch (op) {
    case Op::kAdd: expected = BookieResponse::kAdd; break;
    case Op::kRead: expected = BookieResponse::kRead; break;
    case Op::kReadLac: expected = BookieResponse::kReadLac; break;
    case Op::kInfo: expected = BookieResponse::kInfo; break;
  }
  std::shared_ptr<Connection> connection = std::move(conn).value();
  const Clock::time_point start = Clock::now();
  Result<ResponseFrame> response =
      co_await connection->call(std::move(request), std::move(body), expected, timeout);
  if (response.ok()) {
    metrics->latency_ms->observe(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  } else {
    metrics->failures->inc();
  }
  co_return response;
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
