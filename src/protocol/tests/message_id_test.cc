#include "protocol/message_id.h"

#include <gtest/gtest.h>

#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

TEST(MessageIdTest, SpecialIdsOnTheWire) {
  wire::MessageIdData e = MessageId::earliest().to_wire();
  EXPECT_EQ(e.ledgerid(), UINT64_MAX);
  EXPECT_EQ(e.entryid(), UINT64_MAX);
  EXPECT_FALSE(e.has_partition());
  EXPECT_TRUE(MessageId::from_wire(e).is_earliest());
  wire::MessageIdData l = MessageId::latest().to_wire();
  EXPECT_EQ(l.ledgerid(), static_cast<uint64_t>(INT64_MAX));
  EXPECT_TRUE(MessageId::from_wire(l).is_latest());
  EXPECT_LT(MessageId::earliest(), (MessageId{0, 0}));
  EXPECT_LT((MessageId{1u << 30, 1u << 30}), MessageId::latest());
}

TEST(MessageIdTest, SerializedBytesOmitDefaultsLikePulsarClients) {
  MessageId id{3, 4};
  // ledgerId=3 (08 03), entryId=4 (10 04) and nothing else.
  EXPECT_EQ(id.serialize(), std::string("\x08\x03\x10\x04", 4));
  MessageId batched{3, 4, 2, 5, 10};
  auto back = MessageId::deserialize(batched.serialize());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, batched);
  EXPECT_EQ(back->batch_size, 10);
}

TEST(MessageIdTest, DeserializeRejectsGarbage) {
  EXPECT_EQ(MessageId::deserialize("\x08").status().code(),
            make_error_code(Error::kInvalidMessageId));
  EXPECT_FALSE(MessageId::deserialize("").ok());  // required fields missing
}

TEST(MessageIdTest, OrdersByLedgerEntryThenBatchIndex) {
  EXPECT_LT((MessageId{1, 9}), (MessageId{2, 0}));
  EXPECT_LT((MessageId{1, 1}), (MessageId{1, 2}));
  EXPECT_LT((MessageId{1, 1, -1, -1}), (MessageId{1, 1, -1, 0}));
  EXPECT_LT((MessageId{1, 1, -1, 0}), (MessageId{1, 1, -1, 1}));
}

TEST(MessageIdTest, TextFormRoundTrips) {
  MessageId id{12, 34, 1, 2};
  EXPECT_EQ(id.to_string(), "12:34:1:2");
  auto parsed = MessageId::parse("12:34:1:2");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, id);
  auto short_form = MessageId::parse("5:6");
  ASSERT_TRUE(short_form.ok());
  EXPECT_EQ(short_form->partition, -1);
  EXPECT_EQ(short_form->batch_index, -1);
  EXPECT_TRUE(MessageId::parse("earliest")->is_earliest());
  EXPECT_TRUE(MessageId::parse("latest")->is_latest());
}

TEST(MessageIdTest, BadTextIsRejected) {
  for (const char* bad : {"", "5", "a:b", "1:2:3:4:5", "1::2", "1:2:", "1:2:-7", "1:2:0:99999999999"}) {
    auto r = MessageId::parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), make_error_code(Error::kInvalidMessageId)) << bad;
    }
  }
}

}  // namespace
}  // namespace magnetar::protocol
