// Byte-exact frames laid out by hand from the documented protocol (field tags and varints
// written out below), checked in both directions: our encoder must produce exactly these
// bytes, and our decoder must read them back. Checksums were computed with an independent
// bitwise CRC32C (reflected 0x82F63B78), not with our crc32c code.

#include <gtest/gtest.h>

#include <vector>

#include "protocol/batch.h"
#include "protocol/frame.h"

namespace magnetar::protocol {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes to_bytes(const BufferChain& c) {
  std::string s = c.to_string();
  return Bytes(s.begin(), s.end());
}
Bytes to_bytes(const Buffer& b) { return Bytes(b.data(), b.data() + b.size()); }
Buffer to_buffer(const Bytes& b) { return Buffer::copy_of(b.data(), b.size()); }
void append(Bytes& out, std::string_view s) { out.insert(out.end(), s.begin(), s.end()); }

// CONNECT{client_version="magnetar", protocol_version=21}
const Bytes kConnect = [] {
  Bytes b = {0x00, 0x00, 0x00, 0x14,  // totalSize 20
             0x00, 0x00, 0x00, 0x10,  // commandSize 16
             0x08, 0x02,              // BaseCommand.type = CONNECT (2)
             0x12, 0x0C,              // field 2 (connect), 12 bytes
             0x0A, 0x08};             //   client_version (1), 8 bytes
  append(b, "magnetar");
  b.insert(b.end(), {0x20, 0x15});    //   protocol_version (4) = 21
  return b;
}();

// PRODUCER{topic="persistent://public/default/t", producer_id=1, request_id=2, producer_name="p"}
const Bytes kProducer = [] {
  Bytes b = {0x00, 0x00, 0x00, 0x2E,  // totalSize 46
             0x00, 0x00, 0x00, 0x2A,  // commandSize 42
             0x08, 0x05,              // type = PRODUCER (5)
             0x2A, 0x26,              // field 5 (producer), 38 bytes
             0x0A, 0x1D};             //   topic (1), 29 bytes
  append(b, "persistent://public/default/t");
  b.insert(b.end(), {0x10, 0x01,      //   producer_id (2) = 1
                     0x18, 0x02,      //   request_id (3) = 2
                     0x22, 0x01, 'p'});  // producer_name (4) = "p"
  return b;
}();

// SEND{producer_id=1, sequence_id=7} + MessageMetadata{"p", 7, 1000} + "hello"
const Bytes kSend = [] {
  Bytes b = {0x00, 0x00, 0x00, 0x23,  // totalSize 35
             0x00, 0x00, 0x00, 0x08,  // commandSize 8
             0x08, 0x06,              // type = SEND (6)
             0x32, 0x04,              // field 6 (send), 4 bytes
             0x08, 0x01, 0x10, 0x07,  //   producer_id = 1, sequence_id = 7
             0x0E, 0x01,              // magic
             0x1E, 0xC5, 0xE2, 0x2A,  // crc32c of everything below
             0x00, 0x00, 0x00, 0x08,  // metadataSize 8
             0x0A, 0x01, 'p',         //   producer_name = "p"
             0x10, 0x07,              //   sequence_id = 7
             0x18, 0xE8, 0x07};       //   publish_time = 1000
  append(b, "hello");
  return b;
}();

// MESSAGE{consumer_id=1, message_id={3,4}} + batch of two: "hi" and key "k" -> "you"
const Bytes kBatchedMessage = [] {
  Bytes b = {0x00, 0x00, 0x00, 0x38,        // totalSize 56
             0x00, 0x00, 0x00, 0x0C,        // commandSize 12
             0x08, 0x09,                    // type = MESSAGE (9)
             0x4A, 0x08,                    // field 9 (message), 8 bytes
             0x08, 0x01,                    //   consumer_id = 1
             0x12, 0x04, 0x08, 0x03, 0x10, 0x04,  // message_id {ledgerId 3, entryId 4}
             0x0E, 0x01,                    // magic
             0x7C, 0xBF, 0xD0, 0x0A,        // crc32c
             0x00, 0x00, 0x00, 0x0A,        // metadataSize 10
             0x0A, 0x01, 'p', 0x10, 0x00, 0x18, 0xE8, 0x07,
             0x58, 0x02,                    //   num_messages_in_batch (11) = 2
             0x00, 0x00, 0x00, 0x02,        // single meta size 2
             0x18, 0x02, 'h', 'i',          //   payload_size = 2, "hi"
             0x00, 0x00, 0x00, 0x05,        // single meta size 5
             0x12, 0x01, 'k', 0x18, 0x03,   //   partition_key "k", payload_size 3
             'y', 'o', 'u'};
  return b;
}();

wire::MessageMetadata golden_metadata(uint64_t seq) {
  wire::MessageMetadata m;
  m.set_producer_name("p");
  m.set_sequence_id(seq);
  m.set_publish_time(1000);
  return m;
}

TEST(GoldenFrameTest, Connect) {
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::CONNECT);
  cmd.mutable_connect()->set_client_version("magnetar");
  cmd.mutable_connect()->set_protocol_version(21);
  EXPECT_EQ(to_bytes(encode_command(cmd)), kConnect);

  auto f = decode_frame(to_buffer(kConnect));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->command.type(), wire::BaseCommand::CONNECT);
  EXPECT_EQ(f->command.connect().client_version(), "magnetar");
  EXPECT_EQ(f->command.connect().protocol_version(), 21);
  EXPECT_FALSE(f->has_payload);
}

TEST(GoldenFrameTest, Producer) {
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::PRODUCER);
  auto* p = cmd.mutable_producer();
  p->set_topic("persistent://public/default/t");
  p->set_producer_id(1);
  p->set_request_id(2);
  p->set_producer_name("p");
  EXPECT_EQ(to_bytes(encode_command(cmd)), kProducer);

  auto f = decode_frame(to_buffer(kProducer));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->command.producer().topic(), "persistent://public/default/t");
  EXPECT_EQ(f->command.producer().producer_id(), 1u);
  EXPECT_EQ(f->command.producer().request_id(), 2u);
  EXPECT_EQ(f->command.producer().producer_name(), "p");
}

TEST(GoldenFrameTest, SendWithChecksum) {
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::SEND);
  cmd.mutable_send()->set_producer_id(1);
  cmd.mutable_send()->set_sequence_id(7);
  BufferChain payload(Buffer::copy_of("hello"));
  EXPECT_EQ(to_bytes(encode_payload_command(cmd, golden_metadata(7), payload)), kSend);

  auto f = decode_frame(to_buffer(kSend));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->has_payload);
  EXPECT_TRUE(f->had_checksum);
  EXPECT_EQ(f->command.send().sequence_id(), 7u);
  EXPECT_EQ(f->metadata.producer_name(), "p");
  EXPECT_EQ(f->metadata.publish_time(), 1000u);
  EXPECT_EQ(f->payload.view(), "hello");
  // The stored entry is the frame from the magic onwards, byte for byte.
  EXPECT_EQ(to_bytes(f->entry), Bytes(kSend.begin() + 16, kSend.end()));
}

TEST(GoldenFrameTest, BatchedMessage) {
  BatchBuilder builder;
  builder.add(wire::SingleMessageMetadata(), "hi");
  wire::SingleMessageMetadata keyed;
  keyed.set_partition_key("k");
  builder.add(keyed, "you");
  wire::MessageMetadata md = golden_metadata(0);
  md.set_num_messages_in_batch(builder.count());
  BufferChain payload(builder.finish());

  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::MESSAGE);
  cmd.mutable_message()->set_consumer_id(1);
  cmd.mutable_message()->mutable_message_id()->set_ledgerid(3);
  cmd.mutable_message()->mutable_message_id()->set_entryid(4);
  EXPECT_EQ(to_bytes(encode_payload_command(cmd, md, payload)), kBatchedMessage);

  // The same bytes from a stored entry behind a fresh command.
  BufferChain entry = encode_entry(md, payload);
  EXPECT_EQ(to_bytes(encode_with_entry(cmd, entry.flatten())), kBatchedMessage);

  auto f = decode_frame(to_buffer(kBatchedMessage));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->command.message().message_id().ledgerid(), 3u);
  EXPECT_EQ(f->metadata.num_messages_in_batch(), 2);
  auto msgs = unpack_messages(f->metadata, f->payload, 1 << 20);
  ASSERT_TRUE(msgs.ok()) << msgs.status().to_string();
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].payload.view(), "hi");
  EXPECT_FALSE((*msgs)[0].metadata.has_partition_key());
  EXPECT_EQ((*msgs)[1].payload.view(), "you");
  EXPECT_EQ((*msgs)[1].metadata.partition_key(), "k");
}

}  // namespace
}  // namespace magnetar::protocol
