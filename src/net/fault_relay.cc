#include "net/fault_relay.h"

#include <fmt/format.h>

#include <array>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "common/asio.h"

namespace magnetar::net {

namespace {

using asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr size_t kReadSize = 64 * 1024;

size_t slot(RelayDirection d) {
  return d == RelayDirection::kToTarget ? 0 : 1;
}

// One accepted connection and its connection to the target. Lives on the relay's loop; kept
// alive by the coroutines that serve it (the relay's list holds weak references only).
struct Link {
  struct Chunk {
    Clock::time_point release;  // not written before this (read time + the delay then)
    std::vector<char> bytes;
  };

  explicit Link(asio::io_context& io, tcp::socket accepted)
      : client(std::move(accepted)),
        target(io),
        wake(io),
        connect_deadline(io),
        delay_timers{asio::steady_timer(io), asio::steady_timer(io)} {
    wake.expires_at(Clock::time_point::max());
  }

  // Wakes every coroutine of this link waiting in wait(): they look at the state again.
  void notify() { wake.cancel(); }
  Task<void> wait() {
    error_code ec;
    co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  tcp::socket& source(size_t d) { return d == 0 ? client : target; }
  tcp::socket& sink(size_t d) { return d == 0 ? target : client; }

  tcp::socket client;  // the accepted side
  tcp::socket target;
  asio::steady_timer wake;  // never expires: cancelled by notify()
  asio::steady_timer connect_deadline;
  std::array<asio::steady_timer, 2> delay_timers;
  std::array<std::deque<Chunk>, 2> queue;  // per direction (0: to the target)
  std::array<size_t, 2> queued{0, 0};      // bytes in `queue`
  std::array<bool, 2> source_ended{false, false};
  std::array<bool, 2> sink_shut{false, false};
  bool closed = false;
};

}  // namespace

struct FaultRelay::Impl {
  explicit Impl(FaultRelayOptions o) : options(std::move(o)), acceptor(io) {}

  // Runs `f` on the loop and returns once it ran.
  template <typename F>
  void run_in_loop(F f) {
    std::promise<void> done;
    asio::post(io, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }

  Task<void> accept_loop();
  Task<void> serve(std::shared_ptr<Link> link);
  Task<void> read_pump(std::shared_ptr<Link> link, size_t d);
  Task<void> write_pump(std::shared_ptr<Link> link, size_t d);
  void close_link(Link& link, bool reset);
  // Calls `f` on every open connection (and forgets the closed ones).
  template <typename F>
  void for_each_link(F f) {
    std::vector<std::shared_ptr<Link>> live;
    for (const auto& w : links) {
      if (auto l = w.lock(); l && !l->closed) live.push_back(std::move(l));
    }
    links.assign(live.begin(), live.end());
    for (auto& l : live) f(*l);
  }

  const FaultRelayOptions options;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  tcp::acceptor acceptor;
  tcp::endpoint target_endpoint;
  std::thread thread;

  // The loop's state.
  bool cut = false;
  CutMode mode = CutMode::kBlackhole;
  bool stopping = false;
  std::array<std::chrono::nanoseconds, 2> delay{};
  std::vector<std::weak_ptr<Link>> links;

  // Readable from any thread.
  std::atomic<bool> cut_flag{false};
  std::atomic<int64_t> accepted{0}, open{0}, refused{0}, reset{0};
  std::array<std::atomic<int64_t>, 2> bytes{};
};

void FaultRelay::Impl::close_link(Link& link, bool with_reset) {
  if (link.closed) return;
  link.closed = true;
  for (tcp::socket* s : {&link.client, &link.target}) {
    error_code ec;
    if (with_reset && s->is_open()) s->set_option(asio::socket_base::linger(true, 0), ec);
    s->close(ec);
  }
  link.connect_deadline.cancel();
  for (auto& t : link.delay_timers) t.cancel();
  link.notify();
  --open;
}

Task<void> FaultRelay::Impl::accept_loop() {
  while (!stopping) {
    tcp::socket socket(io);
    error_code ec;
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (stopping) co_return;
    if (ec) {
      // Out of descriptors, or the peer gave up before we took it: try again shortly.
      asio::steady_timer pause(io, std::chrono::milliseconds(10));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    ++accepted;
    if (cut && mode == CutMode::kRefuse) {
      ++refused;  // counted before the peer can see the reset
      socket.set_option(asio::socket_base::linger(true, 0), ec);
      socket.close(ec);
      continue;
    }
    auto link = std::make_shared<Link>(io, std::move(socket));
    ++open;
    std::erase_if(links, [](const std::weak_ptr<Link>& w) { return w.expired(); });
    links.push_back(link);
    asio::co_spawn(io, serve(std::move(link)), asio::detached);
  }
}

Task<void> FaultRelay::Impl::serve(std::shared_ptr<Link> link) {
  // Held (blackholed) until the relay is healed.
  while (cut && !link->closed) co_await link->wait();
  if (link->closed) co_return;
  link->connect_deadline.expires_after(options.connect_timeout);
  link->connect_deadline.async_wait([l = link.get()](const error_code& ec) {
    if (!ec) {
      error_code ignored;
      l->target.close(ignored);  // the connect completes with operation_aborted
    }
  });
  error_code ec;
  co_await link->target.async_connect(target_endpoint,
                                      asio::redirect_error(asio::use_awaitable, ec));
  link->connect_deadline.cancel();
  if (link->closed) co_return;
  if (ec) {
    ++refused;
    close_link(*link, /*reset=*/true);
    co_return;
  }
  link->client.set_option(tcp::no_delay(true), ec);
  link->target.set_option(tcp::no_delay(true), ec);
  for (size_t d : {0u, 1u}) {
    asio::co_spawn(io, read_pump(link, d), asio::detached);
    asio::co_spawn(io, write_pump(link, d), asio::detached);
  }
}

Task<void> FaultRelay::Impl::read_pump(std::shared_ptr<Link> link, size_t d) {
  std::vector<char> buffer(kReadSize);
  while (true) {
    while (!link->closed && (cut || link->queued[d] >= options.max_queued_bytes)) {
      co_await link->wait();
    }
    if (link->closed) co_return;
    error_code ec;
    const size_t n = co_await link->source(d).async_read_some(
        asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
    if (link->closed) co_return;
    if (n > 0) {
      link->queue[d].push_back(Link::Chunk{Clock::now() + delay[d],
                                           std::vector<char>(buffer.begin(), buffer.begin() + n)});
      link->queued[d] += n;
      link->notify();
    }
    if (ec == asio::error::eof) {
      link->source_ended[d] = true;
      link->notify();
      co_return;
    }
    if (ec) {
      close_link(*link, /*reset=*/true);  // the other side learns of the failure too
      co_return;
    }
  }
}

Task<void> FaultRelay::Impl::write_pump(std::shared_ptr<Link> link, size_t d) {
  while (true) {
    while (!link->closed && (cut || (link->queue[d].empty() && !link->source_ended[d]))) {
      co_await link->wait();
    }
    if (link->closed) co_return;
    if (link->queue[d].empty()) {
      // The source ended and everything it sent is written: pass the end on.
      error_code ec;
      link->sink(d).shutdown(tcp::socket::shutdown_send, ec);
      link->sink_shut[d] = true;
      if (link->sink_shut[0] && link->sink_shut[1]) close_link(*link, /*reset=*/false);
      co_return;
    }
    const Clock::time_point release = link->queue[d].front().release;
    if (Clock::now() < release) {
      error_code ec;
      link->delay_timers[d].expires_at(release);
      co_await link->delay_timers[d].async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;  // cut in the meantime, or closed: looked at again above
    }
    // Everything due goes in one write.
    std::vector<char> out = std::move(link->queue[d].front().bytes);
    link->queue[d].pop_front();
    const auto now = Clock::now();
    while (!link->queue[d].empty() && link->queue[d].front().release <= now &&
           out.size() < kReadSize * 4) {
      auto& next = link->queue[d].front().bytes;
      out.insert(out.end(), next.begin(), next.end());
      link->queue[d].pop_front();
    }
    error_code ec;
    co_await asio::async_write(link->sink(d), asio::buffer(out),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (link->closed) co_return;
    if (ec) {
      close_link(*link, /*reset=*/true);
      co_return;
    }
    link->queued[d] -= out.size();
    bytes[d] += static_cast<int64_t>(out.size());
    link->notify();  // a reader held back by the queue's bound may go on
  }
}

Result<std::unique_ptr<FaultRelay>> FaultRelay::start(FaultRelayOptions options) {
  auto impl = std::make_unique<Impl>(options);
  error_code ec;
  const auto listen = asio::ip::make_address(options.listen_address, ec);
  if (ec) {
    return Status(
        Errc::kInvalidArgument,
        fmt::format("relay: listen address '{}' is not an IP address", options.listen_address));
  }
  const auto target = asio::ip::make_address(options.target_address, ec);
  if (ec || options.target_port <= 0 || options.target_port > 65535) {
    return Status(Errc::kInvalidArgument, fmt::format("relay: bad target {}:{}",
                                                      options.target_address, options.target_port));
  }
  impl->target_endpoint = tcp::endpoint(target, static_cast<uint16_t>(options.target_port));
  const tcp::endpoint endpoint(listen, static_cast<uint16_t>(options.listen_port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Errc::kUnavailable,
                  fmt::format("relay: cannot listen on {}:{}: {}", options.listen_address,
                              options.listen_port, ec.message()));
  }
  const int port = impl->acceptor.local_endpoint().port();
  impl->guard.emplace(impl->io.get_executor());
  asio::co_spawn(impl->io, impl->accept_loop(), asio::detached);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::make_unique<FaultRelay>(std::move(options), std::move(impl), port);
}

FaultRelay::FaultRelay(FaultRelayOptions options, std::unique_ptr<Impl> impl, int port)
    : options_(std::move(options)), impl_(std::move(impl)), port_(port) {}

FaultRelay::~FaultRelay() {
  Impl& impl = *impl_;
  impl.run_in_loop([&impl] {
    impl.stopping = true;
    error_code ec;
    impl.acceptor.close(ec);
    impl.for_each_link([&impl](Link& l) { impl.close_link(l, /*reset=*/false); });
  });
  // Every coroutine ends now (its socket closed, its timers cancelled): run() returns.
  impl.guard.reset();
  impl.thread.join();
}

std::string FaultRelay::address() const {
  return fmt::format("{}:{}", options_.listen_address, port_);
}

void FaultRelay::set_delay(RelayDirection direction, std::chrono::milliseconds delay) {
  impl_->run_in_loop([this, direction, delay] { impl_->delay[slot(direction)] = delay; });
}

void FaultRelay::set_delay(std::chrono::milliseconds one_way) {
  impl_->run_in_loop([this, one_way] { impl_->delay = {one_way, one_way}; });
}

void FaultRelay::cut(CutMode mode) {
  impl_->run_in_loop([this, mode] {
    impl_->cut = true;
    impl_->mode = mode;
    impl_->cut_flag = true;
  });
}

void FaultRelay::heal() {
  impl_->run_in_loop([this] {
    impl_->cut = false;
    impl_->cut_flag = false;
    impl_->for_each_link([](Link& l) { l.notify(); });
  });
}

bool FaultRelay::is_cut() const {
  return impl_->cut_flag;
}

int64_t FaultRelay::reset_connections() {
  int64_t n = 0;
  impl_->run_in_loop([this, &n] {
    impl_->for_each_link([this, &n](Link& l) {
      impl_->close_link(l, /*reset=*/true);
      ++n;
    });
  });
  impl_->reset += n;
  return n;
}

FaultRelayStats FaultRelay::stats() const {
  FaultRelayStats s;
  s.accepted = impl_->accepted;
  s.open = impl_->open;
  s.refused = impl_->refused;
  s.reset = impl_->reset;
  s.bytes_to_target = impl_->bytes[0];
  s.bytes_from_target = impl_->bytes[1];
  return s;
}

}  // namespace magnetar::net
