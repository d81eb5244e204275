#include "common/buffer.h"

#include <gtest/gtest.h>

namespace magnetar {
namespace {

TEST(BufferTest, SliceSharesBlockWithoutCopy) {
  Buffer b = Buffer::copy_of("hello world");
  Buffer s = b.slice(6, 5);
  EXPECT_EQ(s.view(), "world");
  EXPECT_TRUE(s.shares_block_with(b));
  EXPECT_EQ(s.data(), b.data() + 6);
  EXPECT_EQ(b.use_count(), 2);
}

TEST(BufferTest, BlockOutlivesOriginalView) {
  Buffer s;
  {
    Buffer b = Buffer::copy_of("abcdef");
    s = b.slice(2);
  }
  EXPECT_EQ(s.view(), "cdef");
  EXPECT_EQ(s.use_count(), 1);
}

TEST(BufferTest, MoveLeavesSourceEmpty) {
  Buffer b = Buffer::copy_of("xyz");
  Buffer m = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(b.use_count(), 0);
  EXPECT_EQ(m.view(), "xyz");
}

TEST(BufferTest, TrimAndTruncateShrinkTheView) {
  Buffer b = Buffer::copy_of("0123456789");
  b.trim_front(2);
  b.truncate(5);
  EXPECT_EQ(b.view(), "23456");
}

TEST(BufferTest, SliceOutOfRangeIsAProgrammingError) {
  Buffer b = Buffer::copy_of("abc");
  EXPECT_DEATH((void)b.slice(2, 5), "out of range");
}

TEST(BufferTest, MutableDataOnSharedBufferIsAProgrammingError) {
  Buffer b = Buffer::allocate(4);
  Buffer other = b;
  EXPECT_DEATH((void)b.mutable_data(), "shared buffer");
}

TEST(BufferChainTest, ReadsPartsAsOneSequence) {
  BufferChain c;
  c.append(Buffer::copy_of("abc"));
  c.append(Buffer());  // empty parts are dropped
  c.append(Buffer::copy_of("defgh"));
  EXPECT_EQ(c.size(), 8u);
  EXPECT_EQ(c.buffers().size(), 2u);
  EXPECT_EQ(c.to_string(), "abcdefgh");
  uint8_t out[4];
  c.copy_to(2, 4, out);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 4), "cdef");
}

TEST(BufferChainTest, SliceAcrossPartsSharesBlocks) {
  Buffer a = Buffer::copy_of("abc");
  Buffer b = Buffer::copy_of("defgh");
  BufferChain c;
  c.append(a);
  c.append(b);
  BufferChain s = c.slice(1, 5);
  EXPECT_EQ(s.to_string(), "bcdef");
  ASSERT_EQ(s.buffers().size(), 2u);
  EXPECT_TRUE(s.buffers()[0].shares_block_with(a));
  EXPECT_TRUE(s.buffers()[1].shares_block_with(b));
}

TEST(BufferChainTest, ConsumeDropsWholePartsAndTrimsTheRest) {
  BufferChain c;
  c.append(Buffer::copy_of("abc"));
  c.append(Buffer::copy_of("defgh"));
  c.consume(4);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.buffers().size(), 1u);
  EXPECT_EQ(c.to_string(), "efgh");
  c.consume(4);
  EXPECT_TRUE(c.empty());
  EXPECT_TRUE(c.buffers().empty());
}

TEST(BufferChainTest, TakeFrontIsZeroCopyInsideTheFirstPart) {
  Buffer a = Buffer::copy_of("abcdef");
  BufferChain c(a);
  c.append(Buffer::copy_of("gh"));
  Buffer first = c.take_front(4);
  EXPECT_EQ(first.view(), "abcd");
  EXPECT_TRUE(first.shares_block_with(a));
  Buffer across = c.take_front(3);  // "ef" + "g": copied into one block
  EXPECT_EQ(across.view(), "efg");
  EXPECT_FALSE(across.shares_block_with(a));
  EXPECT_EQ(c.to_string(), "h");
  EXPECT_TRUE(c.take_front(0).empty());
}

TEST(BufferChainTest, FlattenIsZeroCopyForOnePart) {
  Buffer a = Buffer::copy_of("single");
  BufferChain c(a);
  Buffer f = c.flatten();
  EXPECT_TRUE(f.shares_block_with(a));
  c.append(Buffer::copy_of("+more"));
  EXPECT_EQ(c.flatten().view(), "single+more");
}

}  // namespace
}  // namespace magnetar
