#include "protocol/batch.h"

#include <gtest/gtest.h>

#include "common/endian.h"
#include "protocol/compression.h"
#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

Buffer two_message_batch() {
  BatchBuilder b;
  wire::SingleMessageMetadata m1;
  m1.set_sequence_id(10);
  b.add(m1, "first");
  wire::SingleMessageMetadata m2;
  m2.set_sequence_id(11);
  auto* kv = m2.add_properties();
  kv->set_key("k");
  kv->set_value("v");
  b.add(m2, "second!");
  EXPECT_EQ(b.count(), 2);
  return b.finish();
}

TEST(BatchTest, BuildAndParseRoundTrip) {
  Buffer batch = two_message_batch();
  auto msgs = parse_batch(batch, 2);
  ASSERT_TRUE(msgs.ok()) << msgs.status().to_string();
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].payload.view(), "first");
  EXPECT_EQ((*msgs)[0].metadata.sequence_id(), 10u);
  EXPECT_EQ((*msgs)[1].payload.view(), "second!");
  EXPECT_EQ((*msgs)[1].metadata.properties(0).value(), "v");
  EXPECT_TRUE((*msgs)[1].payload.shares_block_with(batch));
}

TEST(BatchTest, BuilderIsEmptyAfterFinish) {
  BatchBuilder b;
  b.add(wire::SingleMessageMetadata(), "x");
  EXPECT_GT(b.size_bytes(), 0u);
  (void)b.finish();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size_bytes(), 0u);
}

TEST(BatchTest, CountThatLiesIsRejected) {
  Buffer batch = two_message_batch();
  for (int32_t count : {-1, 0, 1, 3, 1 << 30}) {
    auto r = parse_batch(batch, count);
    EXPECT_FALSE(r.ok()) << count;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), make_error_code(Error::kBadBatch));
    }
  }
}

TEST(BatchTest, TruncationAtEveryByteIsRejected) {
  Buffer batch = two_message_batch();
  for (size_t n = 0; n < batch.size(); ++n) {
    EXPECT_FALSE(parse_batch(batch.slice(0, n), 2).ok()) << n;
  }
}

TEST(BatchTest, SizesPointingPastTheEndAreRejected) {
  std::string bytes = two_message_batch().to_string();
  store_be32(reinterpret_cast<uint8_t*>(bytes.data()), 0xFFFFFFF0u);
  EXPECT_FALSE(parse_batch(Buffer::copy_of(bytes), 2).ok());
  // A negative payload_size (varint of -1 is ten bytes) must not slip through.
  wire::SingleMessageMetadata neg;
  neg.set_payload_size(-1);
  std::string meta = neg.SerializeAsString();
  std::string b(4, '\0');
  store_be32(reinterpret_cast<uint8_t*>(b.data()), static_cast<uint32_t>(meta.size()));
  b += meta + "xx";
  EXPECT_FALSE(parse_batch(Buffer::copy_of(b), 1).ok());
}

TEST(UnpackTest, NonBatchedEntryIsOneMessage) {
  wire::MessageMetadata md;
  md.set_producer_name("p");
  md.set_sequence_id(1);
  md.set_publish_time(1);
  auto msgs = unpack_messages(md, Buffer::copy_of("solo"), 1024);
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 1u);
  EXPECT_EQ((*msgs)[0].payload.view(), "solo");
}

TEST(UnpackTest, CompressedBatchIsDecompressedThenSplit) {
  Buffer batch = two_message_batch();
  for (CompressionType t : {CompressionType::kLz4, CompressionType::kZlib, CompressionType::kZstd,
                            CompressionType::kSnappy}) {
    auto compressed = compress(t, batch.span());
    ASSERT_TRUE(compressed.ok());
    wire::MessageMetadata md;
    md.set_producer_name("p");
    md.set_sequence_id(10);
    md.set_publish_time(1);
    md.set_num_messages_in_batch(2);
    md.set_compression(static_cast<wire::CompressionType>(t));
    md.set_uncompressed_size(static_cast<uint32_t>(batch.size()));
    auto msgs = unpack_messages(md, *compressed, 1 << 20);
    ASSERT_TRUE(msgs.ok()) << msgs.status().to_string();
    ASSERT_EQ(msgs->size(), 2u);
    EXPECT_EQ((*msgs)[1].payload.view(), "second!");
    // A claimed size above the bound fails before decompressing.
    EXPECT_FALSE(unpack_messages(md, *compressed, 8).ok());
  }
}

}  // namespace
}  // namespace magnetar::protocol
