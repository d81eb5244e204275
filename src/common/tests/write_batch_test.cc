#include "common/write_batch.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace magnetar {
namespace {

BufferChain frame(const std::string& head, const std::string& body) {
  BufferChain c(Buffer::copy_of(head));
  c.append(BufferChain(Buffer::copy_of(body)));
  return c;
}

std::string joined(const std::vector<boost::asio::const_buffer>& iov) {
  std::string out;
  for (const auto& b : iov) out.append(static_cast<const char*>(b.data()), b.size());
  return out;
}

TEST(WriteBatchTest, TakesWholeFramesInOrderWithinThePieceBound) {
  std::deque<BufferChain> queue;
  for (int i = 0; i < 5; ++i) queue.push_back(frame(fmt::format("h{}", i), "b"));
  std::vector<BufferChain> batch;
  std::vector<boost::asio::const_buffer> iov;
  take_write_batch(queue, batch, iov, 4, 1 << 20);  // two frames of two pieces each
  EXPECT_EQ(batch.size(), 2u);
  EXPECT_EQ(joined(iov), "h0bh1b");
  EXPECT_EQ(queue.size(), 3u);
  take_write_batch(queue, batch, iov, 4, 1 << 20);  // cleared first, then the next two
  EXPECT_EQ(joined(iov), "h2bh3b");
  take_write_batch(queue, batch, iov, 4, 1 << 20);
  EXPECT_EQ(joined(iov), "h4b");
  EXPECT_TRUE(queue.empty());
}

TEST(WriteBatchTest, StopsNearTheByteBoundButTakesAtLeastOneFrame) {
  std::deque<BufferChain> queue;
  queue.push_back(frame("x", std::string(100, 'a')));
  queue.push_back(frame("y", std::string(100, 'b')));
  std::vector<BufferChain> batch;
  std::vector<boost::asio::const_buffer> iov;
  take_write_batch(queue, batch, iov, 1024, 10);  // the first frame alone passes 10 bytes
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_EQ(joined(iov).size(), 101u);
  take_write_batch(queue, batch, iov, 0, 0);  // even with no room: one frame
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_EQ(joined(iov)[0], 'y');
  take_write_batch(queue, batch, iov, 1024, 1 << 20);  // nothing queued
  EXPECT_TRUE(batch.empty());
  EXPECT_TRUE(iov.empty());
}

}  // namespace
}  // namespace magnetar
