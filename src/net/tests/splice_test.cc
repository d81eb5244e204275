// The kernel relay (net/splice.h) between two loopback TCP connections: every byte in order,
// a slow reader on the far side holding the source back, the end of the source ending the
// relay, closing a stream ending it, and TLS streams never spliced.

#include "net/splice.h"

#include <gtest/gtest.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <random>
#include <string>

#include "testing/event_loop.h"

namespace magnetar::net {
namespace {

using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

// A connected pair of sockets on 127.0.0.1.
std::pair<tcp::socket, tcp::socket> socket_pair(testing::EventLoop& loop) {
  tcp::acceptor acceptor(loop.executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(loop.executor());
  client.connect(acceptor.local_endpoint());
  tcp::socket server = acceptor.accept();
  return {std::move(client), std::move(server)};
}

class SpliceTest : public ::testing::Test {
 protected:
  SpliceTest() {
    // source -> [relay: from] ... [relay: to] -> sink
    auto [source, from] = socket_pair(loop_);
    auto [to, sink] = socket_pair(loop_);
    source_ = std::make_unique<tcp::socket>(std::move(source));
    sink_ = std::make_unique<tcp::socket>(std::move(sink));
    from_ = tcp_stream(std::move(from));
    to_ = tcp_stream(std::move(to));
  }

  void start_relay() {
    std::function<void(size_t)> count = [this](size_t n) { moved_ += n; };
    asio::co_spawn(
        loop_.executor(),
        [this, count]() -> Task<void> { result_ = co_await splice_relay(*from_, *to_, count); },
        asio::detached);
  }

  testing::EventLoop loop_;
  std::unique_ptr<tcp::socket> source_, sink_;
  std::unique_ptr<Stream> from_, to_;
  std::optional<error_code> result_;
  size_t moved_ = 0;
};

TEST_F(SpliceTest, EveryByteArrivesInOrderAndTheSourcesEndEndsTheRelay) {
  ASSERT_TRUE(can_splice(*from_, *to_));
  start_relay();
  std::string data(6 * 1024 * 1024 + 123, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng());
  bool written = false;
  asio::async_write(*source_, asio::buffer(data), [&](const error_code& ec, size_t) {
    EXPECT_FALSE(ec) << ec.message();
    written = true;
    source_->shutdown(tcp::socket::shutdown_send);
  });
  std::string received(data.size(), '\0');
  bool read = false;
  asio::async_read(*sink_, asio::buffer(received), [&](const error_code& ec, size_t) {
    EXPECT_FALSE(ec) << ec.message();
    read = true;
  });
  ASSERT_TRUE(loop_.run_until([&] { return read && written && result_.has_value(); }, 30s));
  EXPECT_TRUE(received == data) << "bytes differ";
  EXPECT_EQ(moved_, data.size());
  EXPECT_EQ(*result_, asio::error::eof);
}

TEST_F(SpliceTest, AReaderThatDoesNotReadHoldsTheSourceBack) {
  start_relay();
  // Nobody reads the sink: the relay can move at most what the kernel buffers (socket
  // buffers and the pipe), and the source's writes stall after that.
  std::string chunk(1024 * 1024, 'x');
  size_t accepted = 0;
  bool stalled = false;
  std::function<void()> write_more = [&] {
    asio::async_write(*source_, asio::buffer(chunk), [&](const error_code& ec, size_t n) {
      if (ec) return;
      accepted += n;
      if (accepted < 256u * 1024 * 1024) write_more();
    });
  };
  write_more();
  loop_.run_for(std::chrono::milliseconds(1500));
  stalled = accepted < 256u * 1024 * 1024;
  EXPECT_TRUE(stalled) << "the source was never held back: " << accepted << " bytes accepted";
  EXPECT_LT(moved_, 64u * 1024 * 1024);
  // Reading on the far side lets it go on.
  const size_t before = moved_;
  std::string sink_buffer(8 * 1024 * 1024, '\0');
  bool drained = false;
  asio::async_read(*sink_, asio::buffer(sink_buffer), [&](const error_code&, size_t) { drained = true; });
  ASSERT_TRUE(loop_.run_until([&] { return drained; }, 30s));
  EXPECT_GT(moved_, before);
  source_->close();
  sink_->close();
  from_->close();
  to_->close();
  ASSERT_TRUE(loop_.run_until([&] { return result_.has_value(); }, 10s));
}

TEST_F(SpliceTest, ClosingAStreamEndsTheRelay) {
  start_relay();
  loop_.run_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(result_.has_value());
  from_->close();
  ASSERT_TRUE(loop_.run_until([&] { return result_.has_value(); }, 10s));
  EXPECT_TRUE(*result_);  // aborted, not a clean end
}

}  // namespace
}  // namespace magnetar::net
