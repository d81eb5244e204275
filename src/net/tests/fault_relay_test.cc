// The fault-injecting relay (net/fault_relay.h) between a client socket and a target listener
// of the test, both plain blocking sockets on 127.0.0.1 driven by the test thread: bytes pass
// both ways in order; a delay holds one direction only; a cut passes nothing and keeps the
// connection open, heal delivers what waited; new connections are held (blackhole) or reset
// (refuse) while cut; reset_connections() resets both sides; ends of stream pass through; a
// target that is down resets the accepted connection.

#include "net/fault_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>

namespace magnetar::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Owns a descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// A listener on a free loopback port.
Fd listener(int* port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a = loopback(0);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::listen(fd.get(), 16), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

Fd connect_to(int port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a = loopback(port);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0)
      << std::strerror(errno);
  return fd;
}

bool readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

// Accepts one connection within `timeout`; an empty Fd when none came.
Fd accept_within(const Fd& l, std::chrono::milliseconds timeout) {
  if (!readable(l.get(), timeout)) return Fd();
  return Fd(::accept(l.get(), nullptr, nullptr));
}

void send_all(const Fd& fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << std::strerror(errno);
    done += static_cast<size_t>(n);
  }
}

// What a read returned: bytes, the end of the stream, or an error (errno).
struct Got {
  std::string bytes;
  bool eof = false;
  int error = 0;
};

// Reads until `n` bytes came, the stream ended, an error, or `timeout` passed.
Got read_n(const Fd& fd, size_t n, std::chrono::milliseconds timeout) {
  Got got;
  const auto deadline = Clock::now() + timeout;
  char buf[65536];
  while (got.bytes.size() < n) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= 0ms || !readable(fd.get(), left)) break;
    const ssize_t r = ::recv(fd.get(), buf, std::min(sizeof(buf), n - got.bytes.size()), 0);
    if (r == 0) {
      got.eof = true;
      break;
    }
    if (r < 0) {
      got.error = errno;
      break;
    }
    got.bytes.append(buf, static_cast<size_t>(r));
  }
  return got;
}

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

class FaultRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    target_ = listener(&target_port_);
    FaultRelayOptions o;
    o.target_port = target_port_;
    auto relay = FaultRelay::start(o);
    ASSERT_TRUE(relay.ok()) << relay.status().to_string();
    relay_ = std::move(relay).value();
  }

  // A client connected through the relay and the target's side of it.
  std::pair<Fd, Fd> connect_pair() {
    Fd client = connect_to(relay_->port());
    Fd server = accept_within(target_, 5s);
    EXPECT_GE(server.get(), 0) << "the relay did not connect to the target";
    return {std::move(client), std::move(server)};
  }

  Fd target_;
  int target_port_ = 0;
  std::unique_ptr<FaultRelay> relay_;
};

TEST_F(FaultRelayTest, BytesPassBothWaysInOrder) {
  auto [client, server] = connect_pair();
  const std::string up = random_bytes(1 << 20, 1), down = random_bytes(300 * 1024, 2);
  std::thread writer([&, &client = client] { send_all(client, up); });
  Got got_up = read_n(server, up.size(), 10s);
  writer.join();
  EXPECT_EQ(got_up.bytes.size(), up.size());
  EXPECT_TRUE(got_up.bytes == up);
  std::thread back([&, &server = server] { send_all(server, down); });
  Got got_down = read_n(client, down.size(), 10s);
  back.join();
  EXPECT_TRUE(got_down.bytes == down);
  // The relay counts a write once its completion ran on the relay's thread, which may be a
  // moment after the reader here had the bytes.
  auto s = relay_->stats();
  const auto deadline = Clock::now() + 5s;
  while ((s.bytes_to_target != static_cast<int64_t>(up.size()) ||
          s.bytes_from_target != static_cast<int64_t>(down.size())) &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    s = relay_->stats();
  }
  EXPECT_EQ(s.accepted, 1);
  EXPECT_EQ(s.open, 1);
  EXPECT_EQ(s.bytes_to_target, static_cast<int64_t>(up.size()));
  EXPECT_EQ(s.bytes_from_target, static_cast<int64_t>(down.size()));
  EXPECT_EQ(relay_->address(), "127.0.0.1:" + std::to_string(relay_->port()));
}

TEST_F(FaultRelayTest, ADelayHoldsItsDirectionOnly) {
  auto [client, server] = connect_pair();
  // The bounds leave room for a busy machine: delayed is at least the delay, not delayed is
  // well below it.
  relay_->set_delay(RelayDirection::kToTarget, 500ms);
  auto sent = Clock::now();
  send_all(client, "ping");
  Got got = read_n(server, 4, 5s);
  const auto took = Clock::now() - sent;
  EXPECT_EQ(got.bytes, "ping");
  EXPECT_GE(took, 490ms);
  EXPECT_LT(took, 3s);
  // The answer is not delayed.
  sent = Clock::now();
  send_all(server, "pong");
  got = read_n(client, 4, 5s);
  EXPECT_EQ(got.bytes, "pong");
  EXPECT_LT(Clock::now() - sent, 400ms);
  // Both ways (a round trip costs twice), and back to none.
  relay_->set_delay(300ms);
  sent = Clock::now();
  send_all(client, "a");
  ASSERT_EQ(read_n(server, 1, 5s).bytes, "a");
  send_all(server, "b");
  ASSERT_EQ(read_n(client, 1, 5s).bytes, "b");
  EXPECT_GE(Clock::now() - sent, 590ms);
  relay_->set_delay(0ms);
  sent = Clock::now();
  send_all(client, "c");
  ASSERT_EQ(read_n(server, 1, 5s).bytes, "c");
  EXPECT_LT(Clock::now() - sent, 400ms);
}

TEST_F(FaultRelayTest, ACutPassesNothingKeepsConnectionsOpenAndHealDeliversInOrder) {
  auto [client, server] = connect_pair();
  send_all(client, "before");
  ASSERT_EQ(read_n(server, 6, 5s).bytes, "before");
  relay_->cut();
  EXPECT_TRUE(relay_->is_cut());
  send_all(client, "held-");
  send_all(client, "up");
  send_all(server, "held-down");
  Got up = read_n(server, 1, 500ms);
  Got down = read_n(client, 1, 10ms);
  EXPECT_EQ(up.bytes, "");
  EXPECT_FALSE(up.eof);
  EXPECT_EQ(up.error, 0);
  EXPECT_EQ(down.bytes, "");
  EXPECT_FALSE(down.eof);
  EXPECT_EQ(relay_->stats().open, 1);
  relay_->heal();
  EXPECT_FALSE(relay_->is_cut());
  EXPECT_EQ(read_n(server, 7, 5s).bytes, "held-up");
  EXPECT_EQ(read_n(client, 9, 5s).bytes, "held-down");
  send_all(client, "after");
  EXPECT_EQ(read_n(server, 5, 5s).bytes, "after");
}

TEST_F(FaultRelayTest, NewConnectionsDuringABlackholeAreHeldUntilHeal) {
  relay_->cut();
  Fd client = connect_to(relay_->port());  // the relay accepts: a connect does not fail
  send_all(client, "hello");
  EXPECT_LT(accept_within(target_, 500ms).get(), 0) << "forwarded while cut";
  Got got = read_n(client, 1, 10ms);
  EXPECT_FALSE(got.eof);
  EXPECT_EQ(got.error, 0);
  relay_->heal();
  Fd server = accept_within(target_, 5s);
  ASSERT_GE(server.get(), 0);
  EXPECT_EQ(read_n(server, 5, 5s).bytes, "hello");
}

TEST_F(FaultRelayTest, RefusingCutResetsNewConnections) {
  relay_->cut(CutMode::kRefuse);
  Fd client = connect_to(relay_->port());
  Got got = read_n(client, 1, 5s);
  EXPECT_TRUE(got.error == ECONNRESET || got.eof) << got.error;
  EXPECT_LT(accept_within(target_, 200ms).get(), 0);
  EXPECT_EQ(relay_->stats().refused, 1);
  relay_->heal();
  auto [c2, s2] = connect_pair();
  send_all(c2, "x");
  EXPECT_EQ(read_n(s2, 1, 5s).bytes, "x");
}

TEST_F(FaultRelayTest, ResetConnectionsResetsBothSides) {
  auto [client, server] = connect_pair();
  send_all(client, "x");
  ASSERT_EQ(read_n(server, 1, 5s).bytes, "x");
  EXPECT_EQ(relay_->reset_connections(), 1);
  Got c = read_n(client, 1, 5s);
  Got s = read_n(server, 1, 5s);
  EXPECT_EQ(c.error, ECONNRESET);
  EXPECT_EQ(s.error, ECONNRESET);
  const auto stats = relay_->stats();
  EXPECT_EQ(stats.open, 0);
  EXPECT_EQ(stats.reset, 1);
  // The relay still serves new connections.
  auto [c2, s2] = connect_pair();
  send_all(s2, "y");
  EXPECT_EQ(read_n(c2, 1, 5s).bytes, "y");
}

TEST_F(FaultRelayTest, TheEndOfEachDirectionPassesThrough) {
  auto [client, server] = connect_pair();
  send_all(client, "last words");
  ::shutdown(client.get(), SHUT_WR);
  Got got = read_n(server, 100, 5s);
  EXPECT_EQ(got.bytes, "last words");
  EXPECT_TRUE(got.eof);
  send_all(server, "reply");
  server = Fd();  // closed
  got = read_n(client, 100, 5s);
  EXPECT_EQ(got.bytes, "reply");
  EXPECT_TRUE(got.eof);
  const auto deadline = Clock::now() + 5s;
  while (relay_->stats().open != 0 && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(relay_->stats().open, 0);
}

TEST_F(FaultRelayTest, ATargetThatIsDownResetsTheAcceptedConnection) {
  target_ = Fd();  // nothing listens on the target port any more
  Fd client = connect_to(relay_->port());
  Got got = read_n(client, 1, 5s);
  EXPECT_TRUE(got.error == ECONNRESET || got.eof) << got.error;
  EXPECT_EQ(relay_->stats().refused, 1);
}

TEST(FaultRelayOptionsTest, BadAddressesAreRefusedNamingThem) {
  FaultRelayOptions o;
  o.target_port = 0;
  auto r = FaultRelay::start(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad target"), std::string::npos);
  o.target_port = 1;
  o.listen_address = "not-an-address";
  r = FaultRelay::start(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not-an-address"), std::string::npos);
}

}  // namespace
}  // namespace magnetar::net
