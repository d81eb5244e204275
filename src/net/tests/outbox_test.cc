// The outbox over a recording stream (every gathered write seen piece by piece, writes held
// open or failed on demand) and over a real loopback socket: order, batch bounds, frames
// released once written, a write error reported once, nothing written after close().

#include "net/outbox.h"

#include <gtest/gtest.h>

#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <optional>
#include <string>
#include <vector>

#include "net/stream.h"
#include "testing/event_loop.h"

namespace magnetar::net {
namespace {

using asio::ip::tcp;
using boost::system::error_code;

// Records each write() as its pieces. With hold(), writes wait until release() (or close());
// fail_next() makes the next write fail. A write that close() ends fails with
// operation_aborted, as a socket's does.
class RecordingStream final : public Stream {
 public:
  explicit RecordingStream(Executor executor)
      : Stream(false, "recording:0"), executor_(executor), gate_(executor) {
    gate_.expires_at(asio::steady_timer::time_point::max());
  }

  Executor executor() override { return executor_; }
  Task<Status> handshake(std::string, std::chrono::steady_clock::time_point) override {
    co_return Status::OK();
  }
  Task<size_t> read_some(asio::mutable_buffer, error_code& ec) override {
    ec = asio::error::operation_not_supported;
    co_return 0;
  }
  Task<void> write(const std::vector<asio::const_buffer>& buffers, error_code& ec) override {
    std::vector<std::string> pieces;
    for (const asio::const_buffer& b : buffers) {
      pieces.emplace_back(static_cast<const char*>(b.data()), b.size());
    }
    writes_.push_back(std::move(pieces));
    if (hold_ && !closed_) {
      writing_ = true;
      error_code ignored;
      co_await gate_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      writing_ = false;
    }
    if (closed_) {
      ec = asio::error::operation_aborted;
    } else if (fail_next_) {
      ec = *fail_next_;
      fail_next_.reset();
    }
  }
  void close() override {
    closed_ = true;
    gate_.cancel();
  }

  void hold() { hold_ = true; }
  void release() {
    hold_ = false;
    gate_.cancel();
  }
  void fail_next(error_code ec) { fail_next_ = ec; }
  bool writing() const { return writing_; }

  const std::vector<std::vector<std::string>>& writes() const { return writes_; }
  // Every byte written so far, in order.
  std::string bytes() const {
    std::string out;
    for (const auto& w : writes_) {
      for (const auto& p : w) out += p;
    }
    return out;
  }
  // The number of pieces of each write.
  std::vector<size_t> pieces_per_write() const {
    std::vector<size_t> out;
    for (const auto& w : writes_) out.push_back(w.size());
    return out;
  }

 private:
  Executor executor_;
  asio::steady_timer gate_;
  bool hold_ = false;
  bool writing_ = false;
  bool closed_ = false;
  std::optional<error_code> fail_next_;
  std::vector<std::vector<std::string>> writes_;
};

BufferChain frame(std::string_view bytes) {
  return BufferChain(Buffer::copy_of(bytes));
}

class OutboxTest : public ::testing::Test {
 protected:
  // Starts `outbox.run(stream_)`, recording reported errors and the loop's end.
  void start(Outbox& outbox) {
    asio::co_spawn(loop_.executor(),
                   outbox.run(stream_, [this](const error_code& ec) { errors_.push_back(ec); }),
                   [this](std::exception_ptr e) {
                     if (e) ADD_FAILURE() << "the write loop threw";
                     finished_ = true;
                   });
  }
  // Runs every handler that is ready, and those they make ready.
  void settle() { loop_.context().poll(); }

  testing::EventLoop loop_;
  RecordingStream stream_{loop_.executor()};
  std::vector<error_code> errors_;
  bool finished_ = false;
};

TEST_F(OutboxTest, WritesFramesInPushOrder) {
  Outbox outbox(loop_.executor());
  outbox.push(frame("a"));
  outbox.push(frame("b"));
  start(outbox);
  settle();
  EXPECT_EQ(stream_.bytes(), "ab");
  // Pushed while the loop waits for frames: it wakes.
  outbox.push(frame("c"));
  settle();
  outbox.push(frame("d"));
  outbox.push(frame("e"));
  settle();
  EXPECT_EQ(stream_.bytes(), "abcde");
  EXPECT_EQ(stream_.writes().size(), 3u);
  EXPECT_FALSE(finished_);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(OutboxTest, FramesPushedDuringAWriteGoInTheNextBatch) {
  Outbox outbox(loop_.executor());
  stream_.hold();
  outbox.push(frame("1"));
  start(outbox);
  settle();
  ASSERT_TRUE(stream_.writing());
  outbox.push(frame("2"));
  outbox.push(frame("3"));
  EXPECT_EQ(outbox.queued(), 2u);
  stream_.release();
  settle();
  ASSERT_EQ(stream_.writes().size(), 2u);
  EXPECT_EQ(stream_.writes()[0], (std::vector<std::string>{"1"}));
  EXPECT_EQ(stream_.writes()[1], (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(outbox.queued(), 0u);
}

TEST_F(OutboxTest, KeepsTheOrderOfMultiPieceFrames) {
  Outbox outbox(loop_.executor(), OutboxOptions{.max_pieces = 3, .max_bytes = 1 << 20});
  for (int i = 0; i < 4; ++i) {
    BufferChain f;
    f.append(Buffer::copy_of("h" + std::to_string(i)));
    f.append(Buffer::copy_of("p" + std::to_string(i)));
    outbox.push(std::move(f));
  }
  start(outbox);
  settle();
  EXPECT_EQ(stream_.bytes(), "h0p0h1p1h2p2h3p3");
  // A batch takes frames while it holds fewer than 3 pieces: two frames (4 pieces) each.
  EXPECT_EQ(stream_.pieces_per_write(), (std::vector<size_t>{4, 4}));
}

TEST_F(OutboxTest, BatchStopsAtMaxPieces) {
  Outbox outbox(loop_.executor(), OutboxOptions{.max_pieces = 4, .max_bytes = 1 << 20});
  std::string expected;
  for (int i = 0; i < 10; ++i) {
    const std::string bytes(1, static_cast<char>('a' + i));
    outbox.push(frame(bytes));
    expected += bytes;
  }
  start(outbox);
  settle();
  EXPECT_EQ(stream_.pieces_per_write(), (std::vector<size_t>{4, 4, 2}));
  EXPECT_EQ(stream_.bytes(), expected);
}

TEST_F(OutboxTest, BatchStopsAtMaxBytes) {
  Outbox outbox(loop_.executor(), OutboxOptions{.max_pieces = 1000, .max_bytes = 300});
  for (int i = 0; i < 10; ++i) outbox.push(frame(std::string(100, 'x')));
  start(outbox);
  settle();
  EXPECT_EQ(stream_.pieces_per_write(), (std::vector<size_t>{3, 3, 3, 1}));
}

TEST_F(OutboxTest, AFrameLargerThanMaxBytesGoesAlone) {
  Outbox outbox(loop_.executor(), OutboxOptions{.max_pieces = 1000, .max_bytes = 300});
  outbox.push(frame(std::string(1000, 'L')));
  outbox.push(frame("s"));
  start(outbox);
  settle();
  ASSERT_EQ(stream_.writes().size(), 2u);
  EXPECT_EQ(stream_.writes()[0], (std::vector<std::string>{std::string(1000, 'L')}));
  EXPECT_EQ(stream_.writes()[1], (std::vector<std::string>{"s"}));
}

TEST_F(OutboxTest, ReleasesFramesOnceWritten) {
  Outbox outbox(loop_.executor());
  const Buffer kept = Buffer::copy_of("payload");
  stream_.hold();
  outbox.push(BufferChain(kept));
  EXPECT_EQ(kept.use_count(), 2);
  start(outbox);
  settle();
  ASSERT_TRUE(stream_.writing());
  EXPECT_EQ(kept.use_count(), 2);  // being written: the outbox holds it
  stream_.release();
  settle();
  EXPECT_EQ(stream_.bytes(), "payload");
  EXPECT_FALSE(finished_);         // waiting for more frames...
  EXPECT_EQ(kept.use_count(), 1);  // ...having let go of the written one
}

TEST_F(OutboxTest, WriteErrorEndsTheLoopAndIsReportedOnce) {
  Outbox outbox(loop_.executor(), OutboxOptions{.max_pieces = 1, .max_bytes = 1 << 20});
  const Buffer kept = Buffer::copy_of("first");
  outbox.push(BufferChain(kept));
  outbox.push(frame("second"));
  outbox.push(frame("third"));
  stream_.fail_next(asio::error::broken_pipe);
  start(outbox);
  settle();
  EXPECT_TRUE(finished_);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_EQ(errors_[0], asio::error::broken_pipe);
  EXPECT_EQ(stream_.writes().size(), 1u);  // the frames behind the failed one are dropped
  EXPECT_EQ(kept.use_count(), 1);
  EXPECT_TRUE(outbox.closed());
  EXPECT_EQ(outbox.queued(), 0u);
  outbox.push(frame("late"));
  outbox.close();
  settle();
  EXPECT_EQ(outbox.queued(), 0u);
  EXPECT_EQ(stream_.writes().size(), 1u);
  EXPECT_EQ(errors_.size(), 1u);
}

TEST_F(OutboxTest, CloseWhileWaitingEndsTheLoop) {
  Outbox outbox(loop_.executor());
  start(outbox);
  settle();
  EXPECT_FALSE(finished_);
  outbox.close();
  settle();
  EXPECT_TRUE(finished_);
  EXPECT_TRUE(errors_.empty());
  EXPECT_TRUE(stream_.writes().empty());
}

TEST_F(OutboxTest, NothingIsWrittenAfterClose) {
  Outbox outbox(loop_.executor());
  outbox.push(frame("queued before close"));
  outbox.close();
  EXPECT_EQ(outbox.queued(), 0u);
  outbox.push(frame("pushed after close"));
  EXPECT_EQ(outbox.queued(), 0u);
  start(outbox);
  settle();
  EXPECT_TRUE(finished_);
  EXPECT_TRUE(stream_.writes().empty());
  EXPECT_TRUE(errors_.empty());
}

TEST_F(OutboxTest, CloseDuringAWriteEndsTheLoopUnreported) {
  Outbox outbox(loop_.executor(), OutboxOptions{.max_pieces = 1, .max_bytes = 1 << 20});
  stream_.hold();
  outbox.push(frame("in flight"));
  outbox.push(frame("queued"));
  start(outbox);
  settle();
  ASSERT_TRUE(stream_.writing());
  // What an owner's close does: the transport first (aborting the write), then the outbox.
  stream_.close();
  outbox.close();
  settle();
  EXPECT_TRUE(finished_);
  EXPECT_TRUE(errors_.empty());  // the owner knows why it closed
  EXPECT_EQ(stream_.writes().size(), 1u);
}

// The socket overload: bytes in order on the peer, then a failed write (the socket shut for
// sending) reported once.
TEST(OutboxSocketTest, WritesToATcpSocketAndReportsItsFailure) {
  testing::EventLoop loop;
  tcp::acceptor acceptor(loop.executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(loop.executor());
  client.connect(acceptor.local_endpoint());
  tcp::socket server = acceptor.accept();

  Outbox outbox(loop.executor(), OutboxOptions{.max_pieces = 2, .max_bytes = 1 << 20});
  std::vector<error_code> errors;
  bool finished = false;
  asio::co_spawn(loop.executor(),
                 outbox.run(client, [&](const error_code& ec) { errors.push_back(ec); }),
                 [&](std::exception_ptr) { finished = true; });
  std::string expected;
  for (int i = 0; i < 5; ++i) {
    BufferChain f;
    f.append(Buffer::copy_of(std::string(3, static_cast<char>('a' + i))));
    f.append(Buffer::copy_of(std::string(70000, static_cast<char>('A' + i))));
    expected += f.to_string();
    outbox.push(std::move(f));
  }
  std::string received(expected.size(), '\0');
  bool read = false;
  asio::async_read(server, asio::buffer(received), [&](const error_code& ec, size_t) {
    EXPECT_FALSE(ec) << ec.message();
    read = true;
  });
  ASSERT_TRUE(loop.run_until([&] { return read; }));
  EXPECT_EQ(received, expected);
  EXPECT_FALSE(finished);

  client.shutdown(tcp::socket::shutdown_send);
  outbox.push(frame("after shutdown"));
  ASSERT_TRUE(loop.run_until([&] { return finished; }));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], asio::error::broken_pipe);
  EXPECT_TRUE(outbox.closed());
}

}  // namespace
}  // namespace magnetar::net
