#include "protocol/frame.h"

#include <gtest/gtest.h>

#include <random>

#include "common/crc32c.h"
#include "common/endian.h"
#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

wire::BaseCommand ping() {
  wire::BaseCommand c;
  c.set_type(wire::BaseCommand::PING);
  c.mutable_ping();
  return c;
}

wire::BaseCommand send_command(uint64_t seq) {
  wire::BaseCommand c;
  c.set_type(wire::BaseCommand::SEND);
  c.mutable_send()->set_producer_id(9);
  c.mutable_send()->set_sequence_id(seq);
  return c;
}

wire::MessageMetadata metadata(uint64_t seq) {
  wire::MessageMetadata m;
  m.set_producer_name("prod");
  m.set_sequence_id(seq);
  m.set_publish_time(1700000000000);
  return m;
}

std::string send_frame(uint64_t seq, std::string_view payload) {
  return encode_payload_command(send_command(seq), metadata(seq),
                                BufferChain(Buffer::copy_of(payload)))
      .to_string();
}

std::string header(uint32_t total, uint32_t command) {
  std::string h(8, '\0');
  store_be32(reinterpret_cast<uint8_t*>(h.data()), total);
  store_be32(reinterpret_cast<uint8_t*>(h.data()) + 4, command);
  return h;
}

TEST(FrameDecoderTest, FramesSplitAcrossReadsAtEveryByte) {
  std::string stream = encode_command(ping()).to_string() + send_frame(1, "payload-one") +
                       send_frame(2, std::string(3000, 'x'));
  for (size_t chunk : {1u, 2u, 3u, 7u, 64u, 4096u}) {
    FrameDecoder d;
    std::vector<Frame> frames;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      d.feed(Buffer::copy_of(stream.substr(i, chunk)));
      while (true) {
        auto f = d.next();
        ASSERT_TRUE(f.ok()) << f.status().to_string();
        if (!f->has_value()) break;
        frames.push_back(std::move(**f));
      }
    }
    ASSERT_EQ(frames.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(frames[0].command.type(), wire::BaseCommand::PING);
    EXPECT_EQ(frames[1].payload.view(), "payload-one");
    EXPECT_EQ(frames[1].metadata.sequence_id(), 1u);
    EXPECT_EQ(frames[2].payload.size(), 3000u);
    EXPECT_EQ(d.buffered_bytes(), 0u);
  }
}

TEST(FrameDecoderTest, ManyFramesInOneReadShareTheReadBuffer) {
  std::string stream = send_frame(1, "a") + send_frame(2, "bb") + send_frame(3, "ccc");
  Buffer read = Buffer::copy_of(stream);
  FrameDecoder d;
  d.feed(read);
  for (std::string_view want : {"a", "bb", "ccc"}) {
    auto f = d.next();
    ASSERT_TRUE(f.ok() && f->has_value());
    EXPECT_EQ((*f)->payload.view(), want);
    EXPECT_TRUE((*f)->payload.shares_block_with(read));  // zero-copy
  }
  auto none = d.next();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(FrameDecoderTest, TheReusedFrameCarriesNothingOverFromTheFrameBefore) {
  std::string stream = send_frame(1, "payload-one") + encode_command(ping()).to_string() +
                       send_frame(2, "x");
  FrameDecoder d;
  d.feed(Buffer::copy_of(stream.substr(0, 10)));
  auto none = d.next_frame();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr) << "more bytes are needed";
  d.feed(Buffer::copy_of(stream.substr(10)));

  auto first = d.next_frame();
  ASSERT_TRUE(first.ok() && *first != nullptr);
  Frame* f = *first;
  EXPECT_TRUE(f->has_payload);
  EXPECT_TRUE(f->had_checksum);
  EXPECT_EQ(f->metadata.producer_name(), "prod");
  EXPECT_EQ(f->payload.view(), "payload-one");
  EXPECT_FALSE(f->entry.empty());

  auto second = d.next_frame();
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(*second, f) << "one Frame, reused";
  EXPECT_EQ(f->command.type(), wire::BaseCommand::PING);
  EXPECT_FALSE(f->command.has_send());
  EXPECT_FALSE(f->has_payload);
  EXPECT_FALSE(f->had_checksum);
  EXPECT_FALSE(f->broker_entry_metadata.has_value());
  EXPECT_FALSE(f->metadata.has_producer_name());
  EXPECT_FALSE(f->metadata.has_sequence_id());
  EXPECT_TRUE(f->metadata_bytes.empty());
  EXPECT_TRUE(f->payload.empty());
  EXPECT_TRUE(f->entry.empty());

  auto third = d.next_frame();
  ASSERT_TRUE(third.ok() && *third == f);
  EXPECT_EQ(f->command.send().sequence_id(), 2u);
  EXPECT_EQ(f->metadata.sequence_id(), 2u);
  EXPECT_EQ(f->payload.view(), "x");
  EXPECT_EQ(d.buffered_bytes(), 0u);

  // A malformed frame fails the decoder for good, as next() does.
  d.feed(Buffer::copy_of(header(4, 100)));
  EXPECT_FALSE(d.next_frame().ok());
  d.feed(Buffer::copy_of(encode_command(ping()).to_string()));
  EXPECT_FALSE(d.next_frame().ok());
  EXPECT_TRUE(d.failed());
}

TEST(FrameDecoderTest, OversizedLengthFailsBeforeTheBytesArrive) {
  FrameDecoder d;
  d.feed(Buffer::copy_of(header(100 * 1024 * 1024, 4)));  // a 100 MiB frame header
  auto f = d.next();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), make_error_code(Error::kFrameTooLarge));
  EXPECT_TRUE(d.failed());
}

TEST(FrameDecoderTest, MaximumIsConfigurableAndInclusive) {
  std::string frame = send_frame(1, std::string(1000, 'z'));
  DecoderOptions exact{static_cast<uint32_t>(frame.size()), true};
  FrameDecoder ok(exact);
  ok.feed(Buffer::copy_of(frame));
  ASSERT_TRUE(ok.next().ok());
  DecoderOptions smaller{static_cast<uint32_t>(frame.size() - 1), true};
  FrameDecoder too_big(smaller);
  too_big.feed(Buffer::copy_of(frame));
  EXPECT_EQ(too_big.next().status().code(), make_error_code(Error::kFrameTooLarge));
}

TEST(FrameDecoderTest, DefaultMaximumMatchesPulsar) {
  EXPECT_EQ(kDefaultMaxFrameSize, 5253120u);
}

TEST(FrameDecoderTest, FailedDecoderStaysFailed) {
  FrameDecoder d;
  d.feed(Buffer::copy_of(header(2, 0)));  // totalSize below the minimum
  EXPECT_FALSE(d.next().ok());
  d.feed(Buffer::copy_of(encode_command(ping()).view()));
  EXPECT_FALSE(d.next().ok());
}

TEST(DecodeFrameTest, LyingSizesAreMalformed) {
  std::string good = encode_command(ping()).to_string();
  // Command size larger than the frame.
  std::string lie = header(4 + 2, 50) + good.substr(8);
  EXPECT_EQ(decode_frame(Buffer::copy_of(lie)).status().code(),
            make_error_code(Error::kMalformedFrame));
  // Total size disagreeing with the bytes handed over.
  std::string longer = good + "xx";
  EXPECT_EQ(decode_frame(Buffer::copy_of(longer)).status().code(),
            make_error_code(Error::kMalformedFrame));
  // Metadata size pointing past the end of a SEND.
  std::string send = send_frame(1, "p");
  store_be32(reinterpret_cast<uint8_t*>(send.data()) + 8 + send_command(1).ByteSizeLong() + 6,
             0x7fffffff);
  EXPECT_EQ(decode_frame(Buffer::copy_of(send)).status().code(),
            make_error_code(Error::kMalformedFrame));
}

TEST(DecodeFrameTest, CorruptedPayloadFailsTheChecksum) {
  std::string send = send_frame(1, "important");
  send.back() ^= 0x01;
  auto f = decode_frame(Buffer::copy_of(send));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), make_error_code(Error::kChecksumMismatch));
  EXPECT_TRUE(f.status().is(Errc::kCorruption));
}

TEST(DecodeFrameTest, SendWithoutChecksumIsAcceptedAndStoredWithOne) {
  // Protocol < v6 clients send [metadataSize][metadata][payload] with no magic.
  wire::MessageMetadata md = metadata(5);
  std::string cmd = send_command(5).SerializeAsString();
  std::string meta = md.SerializeAsString();
  std::string body = header(0, 0).substr(4);  // 4 bytes placeholder for metadataSize
  store_be32(reinterpret_cast<uint8_t*>(body.data()), static_cast<uint32_t>(meta.size()));
  body += meta + "old";
  std::string frame = header(static_cast<uint32_t>(4 + cmd.size() + body.size()),
                             static_cast<uint32_t>(cmd.size())) + cmd + body;
  auto f = decode_frame(Buffer::copy_of(frame));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_FALSE(f->had_checksum);
  EXPECT_EQ(f->payload.view(), "old");
  // The entry gained magic + checksum and parses with verification.
  auto view = parse_entry(f->entry);
  ASSERT_TRUE(view.ok()) << view.status().to_string();
  EXPECT_TRUE(view->had_checksum);
  EXPECT_EQ(view->payload.view(), "old");
}

TEST(DecodeFrameTest, SendWithoutMetadataIsMalformed) {
  std::string cmd = send_command(1).SerializeAsString();
  std::string frame = header(static_cast<uint32_t>(4 + cmd.size()), cmd.size()) + cmd;
  EXPECT_EQ(decode_frame(Buffer::copy_of(frame)).status().code(),
            make_error_code(Error::kMalformedFrame));
}

TEST(DecodeFrameTest, MetadataMissingRequiredFieldsIsBadMetadata) {
  wire::MessageMetadata partial;
  partial.set_producer_name("p");  // no sequence_id, no publish_time
  std::string cmd = send_command(1).SerializeAsString();
  std::string meta = partial.SerializePartialAsString();
  std::string rest(4, '\0');
  store_be32(reinterpret_cast<uint8_t*>(rest.data()), static_cast<uint32_t>(meta.size()));
  rest += meta;
  uint32_t crc = crc32c::value(rest.data(), rest.size());
  std::string magic(6, '\0');
  store_be16(reinterpret_cast<uint8_t*>(magic.data()), kMagicCrc32c);
  store_be32(reinterpret_cast<uint8_t*>(magic.data()) + 2, crc);
  std::string frame =
      header(static_cast<uint32_t>(4 + cmd.size() + 6 + rest.size()), cmd.size()) + cmd +
      magic + rest;
  EXPECT_EQ(decode_frame(Buffer::copy_of(frame)).status().code(),
            make_error_code(Error::kBadMetadata));
}

TEST(DecodeFrameTest, UnknownCommandTypeIsReportedAsSuch) {
  // BaseCommand with type = 999 (varint E7 07) and nothing else.
  std::string cmd = {0x08, static_cast<char>(0xE7), 0x07};
  std::string frame = header(4 + 3, 3) + cmd;
  EXPECT_EQ(decode_frame(Buffer::copy_of(frame)).status().code(),
            make_error_code(Error::kUnknownCommand));
}

TEST(DecodeFrameTest, CommandMissingRequiredFieldsIsBadCommand) {
  wire::BaseCommand c;
  c.set_type(wire::BaseCommand::PRODUCER);
  c.mutable_producer()->set_topic("t");  // producer_id and request_id missing
  std::string cmd = c.SerializePartialAsString();
  std::string frame = header(static_cast<uint32_t>(4 + cmd.size()), cmd.size()) + cmd;
  EXPECT_EQ(decode_frame(Buffer::copy_of(frame)).status().code(),
            make_error_code(Error::kBadCommand));
}

TEST(DecodeFrameTest, UnknownFieldsFromNewerPeersAreIgnored) {
  std::string cmd = ping().SerializeAsString();
  cmd += std::string{static_cast<char>(0xC0), 0x3E, 0x01};  // field 1000, varint 1
  std::string frame = header(static_cast<uint32_t>(4 + cmd.size() + 4), cmd.size()) + cmd + "tail";
  auto f = decode_frame(Buffer::copy_of(frame));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->command.type(), wire::BaseCommand::PING);
}

TEST(DecodeFrameTest, BrokerEntryMetadataPrefixIsRead) {
  wire::BaseCommand c;
  c.set_type(wire::BaseCommand::MESSAGE);
  c.mutable_message()->set_consumer_id(1);
  c.mutable_message()->mutable_message_id()->set_ledgerid(1);
  c.mutable_message()->mutable_message_id()->set_entryid(2);
  BufferChain entry = encode_entry(metadata(1), BufferChain(Buffer::copy_of("body")));
  wire::BrokerEntryMetadata bem;
  bem.set_broker_timestamp(123456);
  bem.set_index(77);
  Buffer frame = encode_with_entry(c, entry.flatten(), &bem).flatten();
  auto f = decode_frame(frame);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_TRUE(f->broker_entry_metadata.has_value());
  EXPECT_EQ(f->broker_entry_metadata->index(), 77u);
  EXPECT_EQ(f->payload.view(), "body");
  EXPECT_EQ(f->entry.view(), entry.to_string());
}

TEST(ParseEntryTest, DetectsCorruptionAndBadSizes) {
  Buffer entry = encode_entry(metadata(1), BufferChain(Buffer::copy_of("data"))).flatten();
  ASSERT_TRUE(parse_entry(entry).ok());
  std::string bad = entry.to_string();
  bad[bad.size() - 1] ^= 0x40;
  EXPECT_EQ(parse_entry(Buffer::copy_of(bad)).status().code(),
            make_error_code(Error::kChecksumMismatch));
  EXPECT_FALSE(parse_entry(Buffer::copy_of(std::string("\x0e\x01\x00", 3))).ok());
  EXPECT_FALSE(parse_entry(Buffer()).ok());
}

TEST(EncodeTest, PayloadIsReferencedNotCopied) {
  Buffer payload = Buffer::copy_of(std::string(4096, 'q'));
  BufferChain out = encode_payload_command(send_command(1), metadata(1), BufferChain(payload));
  ASSERT_EQ(out.buffers().size(), 2u);
  EXPECT_TRUE(out.buffers()[1].shares_block_with(payload));
}

TEST(EncodeTest, IncompleteCommandIsAProgrammingError) {
  wire::BaseCommand c;
  c.set_type(wire::BaseCommand::PRODUCER);
  EXPECT_DEATH((void)encode_command(c), "required fields unset");
}

TEST(DecodeFrameTest, RandomGarbageNeverCrashes) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (junk.size() >= 4 && (rng() % 2)) {
      store_be32(reinterpret_cast<uint8_t*>(junk.data()), static_cast<uint32_t>(junk.size() - 4));
    }
    FrameDecoder d;
    d.feed(Buffer::copy_of(junk));
    for (int k = 0; k < 4; ++k) {
      auto f = d.next();
      if (!f.ok() || !f->has_value()) break;
    }
  }
}

}  // namespace
}  // namespace magnetar::protocol
